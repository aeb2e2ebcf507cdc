#!/usr/bin/env bash
# Builds the NUMA test machine's boot files, or finds them in the cache: a Debian kernel
# taken from its package (never installed on the host) and an initramfs made of
# busybox-static, the kairos binary, its libraries, the sample programs and the few kernel
# modules the guest needs. See README.md beside this file.
#
# usage: build.sh [--kairos PATH]     (default: <target>/release/kairos; the samples and
#                                      lib/ directories next to it come along)
# Prints the image directory (vmlinuz, initramfs.cpio, kernel-release) as the last line of
# stdout. Exit status 0; 3 when the machine cannot be built (the reason on stderr); 2 on a
# usage error.
#
# Environment: CARGO_TARGET_DIR; KAIROS_VM_CACHE (default <target>/numa-vm);
# KAIROS_VM_KERNEL (Debian flavour, default cloud-amd64); KAIROS_VM_REFRESH_KERNEL=1 to
# fetch the newest kernel package again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cache=${KAIROS_VM_CACHE:-$target/numa-vm}
flavour=${KAIROS_VM_KERNEL:-cloud-amd64}
kairos=$target/release/kairos
# Drivers for the result disk (virtio-blk) and the NIC on node 1 (virtio-net).
modules=(virtio_pci virtio_blk virtio_net)

fail() { echo "numa-vm: cannot build the machine: $*" >&2; exit 3; }
while [ $# -gt 0 ]; do
  case $1 in
    --kairos) [ $# -ge 2 ] || { echo "usage: build.sh [--kairos PATH]" >&2; exit 2; }; kairos=$2; shift 2 ;;
    *) echo "usage: build.sh [--kairos PATH]" >&2; exit 2 ;;
  esac
done
[ -x "$kairos" ] || fail "no kairos binary at $kairos (build it first: cargo build --release -p kairos)"
kairos=$(cd "$(dirname "$kairos")" && pwd)/$(basename "$kairos")
bindir=$(dirname "$kairos")

# Host tools: installed on demand when we are root (Debian packages only).
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v dpkg-deb >/dev/null || need+=(dpkg)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null ||
    fail "missing Debian packages ${need[*]} (install them: apt-get install ${need[*]})"
  echo "numa-vm: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; } ||
    fail "apt-get install ${need[*]} failed (no network or no such package)"
fi
bb=/bin/busybox

mkdir -p "$cache"
tmps=()
trap 'rm -rf "${tmps[@]}"' EXIT
# One builder at a time: tests may call this concurrently.
exec 9>"$cache/.lock"
flock 9

# --- The kernel: downloaded once, reused offline. ---
kdir=$cache/kernel
rel=$(cat "$kdir/current" 2>/dev/null || true)
if [ -z "$rel" ] || [ ! -f "$kdir/$rel/vmlinuz" ] || [ "${KAIROS_VM_REFRESH_KERNEL:-0}" = 1 ]; then
  meta=linux-image-$flavour
  pkg_of() { apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'; }
  pkg=$(pkg_of || true)
  [ -n "$pkg" ] || { apt-get update -qq >/dev/null 2>&1 || true; pkg=$(pkg_of || true); }
  [ -n "$pkg" ] || fail "apt-cache finds no kernel package behind $meta (no such package, or apt-get update failed: no network?)"
  tmp=$(mktemp -d "$cache/tmp.XXXXXX")
  tmps+=("$tmp")
  chmod 777 "$tmp" # apt-get download drops to the _apt user
  echo "numa-vm: downloading $pkg" >&2
  (cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || fail "apt-get download $pkg failed (no network?)"
  dpkg-deb -x "$tmp"/*.deb "$tmp/x" || fail "dpkg-deb cannot unpack $pkg"
  rel=${pkg#linux-image-}
  [ -f "$tmp/x/boot/vmlinuz-$rel" ] || fail "$pkg holds no boot/vmlinuz-$rel"
  "$bb" depmod -b "$tmp/x" "$rel" || fail "depmod failed on $pkg"
  rm -rf "${kdir:?}/$rel" && mkdir -p "$kdir/$rel"
  mv "$tmp/x/boot/vmlinuz-$rel" "$kdir/$rel/vmlinuz"
  mv "$tmp/x/boot/config-$rel" "$kdir/$rel/config"
  mv "$tmp/x/lib/modules/$rel" "$kdir/$rel/modules"
  echo "$rel" >"$kdir/current"
fi
kernel=$kdir/$rel

# --- What goes into the initramfs, and the cache key over all of it. ---
# A copy of kairos, so that a cargo build replacing it meanwhile cannot make the key and
# the image disagree.
snap=$(mktemp -d "$cache/tmp.XXXXXX")
tmps+=("$snap")
cp "$kairos" "$snap/kairos"
files=("$here/build.sh" "$here/init" "$bb" "$snap/kairos")
[ -d "$bindir/samples" ] && while IFS= read -r f; do files+=("$f"); done < <(find "$bindir/samples" -maxdepth 1 -type f -perm -u+x | sort)
[ -d "$bindir/lib" ] && while IFS= read -r f; do files+=("$f"); done < <(find "$bindir/lib" -maxdepth 1 -type f -name '*.so' | sort)
# Shared libraries of every executable, by the paths the dynamic loader will look for.
libs=$(for f in "${files[@]:3}"; do ldd "$f" 2>/dev/null || true; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
# The modules and what they need, from modules.dep.
mods=$(for m in "${modules[@]}"; do
  awk -v m="/$m.ko:" 'index($0, m) {sub(":", ""); print}' "$kernel/modules/modules.dep"
done | tr ' ' '\n' | sort -u)
[ -n "$mods" ] || fail "the kernel $rel has no modules ${modules[*]}"
# Content and base name of each file: the copy of kairos lives at a new path every time.
key=$( { echo "$rel"; echo "$mods"; echo "$libs"; sha256sum "${files[@]}"; for l in $libs; do sha256sum "$(readlink -f "$l")"; done; } |
  awk '{n = $NF; sub(".*/", "", n); print $1, n}' | sha256sum | cut -c1-16)
out=$cache/images/$key
if [ -f "$out/initramfs.cpio" ]; then echo "$out"; exit 0; fi

echo "numa-vm: building the initramfs $key" >&2
stage=$(mktemp -d "$cache/tmp.XXXXXX")
tmps+=("$stage")
r=$stage/root
mkdir -p "$r"/{bin,sbin,proc,sys,dev,tmp,run,out,job,etc,opt/kairos,lib/modules/"$rel"}
cp "$bb" "$r/bin/busybox"
for a in $("$bb" --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
cp "$here/init" "$r/init"
chmod 755 "$r/init"
# kairos without its debug sections: 115 MB -> about 20 MB; it never symbolises itself.
if command -v strip >/dev/null; then strip --strip-debug -o "$r/opt/kairos/kairos" "$snap/kairos"; else cp "$snap/kairos" "$r/opt/kairos/kairos"; fi
[ -d "$bindir/samples" ] && cp -r "$bindir/samples" "$r/opt/kairos/samples"
[ -d "$bindir/lib" ] && { mkdir -p "$r/opt/kairos/lib"; cp "$bindir"/lib/*.so "$r/opt/kairos/lib/" 2>/dev/null || true; }
for l in $libs; do mkdir -p "$r$(dirname "$l")"; cp -L "$l" "$r$l"; done
for m in $mods; do mkdir -p "$r/lib/modules/$rel/$(dirname "$m")"; cp "$kernel/modules/$m" "$r/lib/modules/$rel/$m"; done
grep -F -f <(printf '%s:\n' $mods) "$kernel/modules/modules.dep" >"$r/lib/modules/$rel/modules.dep"
echo "$rel" >"$r/etc/kernel-release"
# The kernel's configuration, where the guest's tools look for it: `kairos info` tells a
# kernel without resctrl from a CPU without RDT by it.
[ -f "$kernel/config" ] && { mkdir -p "$r/boot"; cp "$kernel/config" "$r/boot/config-$rel"; }
mkdir -p "$stage/img"
# Uncompressed: the guest unpacks it faster than it would decompress it under emulation.
(cd "$r" && find . | LC_ALL=C sort | "$bb" cpio -o -H newc >"$stage/img/initramfs.cpio" 2>/dev/null) ||
  fail "cpio failed"
cp "$kernel/vmlinuz" "$stage/img/vmlinuz"
echo "$rel" >"$stage/img/kernel-release"
mkdir -p "$cache/images"
rm -rf "$out"
mv "$stage/img" "$out"
# Keep the three newest images; each is about 30 MB.
ls -1dt "$cache"/images/*/ 2>/dev/null | tail -n +4 | xargs -r rm -rf
echo "$out"
