//! The little of the protobuf wire format pprof needs: varints, length-delimited fields
//! and packed repeated integers. Written by hand so that no protoc or generated code is
//! needed for a dozen fields.

/// Encodes one message into a byte buffer, field by field.
#[derive(Default)]
pub(crate) struct Msg {
    pub buf: Vec<u8>,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Msg {
    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A varint field (uint64, or int64 as two's complement); zero is the default and
    /// is left out, as protobuf encoders do.
    pub fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.key(field, 0);
            varint(&mut self.buf, v);
        }
    }

    pub fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    pub fn bool(&mut self, field: u32, v: bool) {
        self.uint(field, u64::from(v));
    }

    /// A length-delimited field (string, bytes, sub-message), written even when empty
    /// (repeated strings such as the string table need their empty entries).
    pub fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn msg(&mut self, field: u32, m: &Msg) {
        self.bytes(field, &m.buf);
    }

    /// A packed repeated varint field.
    pub fn packed(&mut self, field: u32, values: impl IntoIterator<Item = u64>) {
        let mut inner = Vec::new();
        for v in values {
            varint(&mut inner, v);
        }
        if !inner.is_empty() {
            self.bytes(field, &inner);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal decoder for the round-trip tests: (field, wire type, varint or bytes).
    pub(crate) fn decode(mut b: &[u8]) -> Vec<(u32, u64, Vec<u8>)> {
        fn v(b: &mut &[u8]) -> u64 {
            let mut x = 0u64;
            let mut shift = 0;
            while let Some((&c, rest)) = b.split_first() {
                *b = rest;
                x |= u64::from(c & 0x7f) << shift;
                shift += 7;
                if c < 0x80 {
                    break;
                }
            }
            x
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = v(&mut b);
            let (field, wire) = ((key >> 3) as u32, key & 7);
            if wire == 0 {
                out.push((field, v(&mut b), Vec::new()));
            } else {
                let n = v(&mut b) as usize;
                out.push((field, n as u64, b[..n].to_vec()));
                b = &b[n..];
            }
        }
        out
    }

    pub(crate) fn unpack(mut b: &[u8]) -> Vec<u64> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let mut x = 0u64;
            let mut shift = 0;
            while let Some((&c, rest)) = b.split_first() {
                b = rest;
                x |= u64::from(c & 0x7f) << shift;
                shift += 7;
                if c < 0x80 {
                    break;
                }
            }
            out.push(x);
        }
        out
    }

    #[test]
    fn varints_and_fields() {
        let mut m = Msg::default();
        m.uint(1, 300);
        m.int(2, -1);
        m.uint(3, 0);
        m.bytes(4, b"hi");
        m.packed(5, [1, 128]);
        assert_eq!(m.buf[..3], [0x08, 0xac, 0x02]);
        let d = decode(&m.buf);
        assert_eq!(d[0], (1, 300, vec![]));
        assert_eq!(d[1], (2, u64::MAX, vec![]));
        assert_eq!(d[2], (4, 2, b"hi".to_vec()));
        assert_eq!(unpack(&d[3].2), [1, 128]);
    }
}
