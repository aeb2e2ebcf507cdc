#!/usr/bin/env bash
# Boots the NUMA test machine, runs one shell script in it as root, and brings the result
# back. See README.md beside this file.
#
# usage: run.sh --out DIR [--nodes N] [--cpus N] [--mem MIB] [--nic-node K] [--timeout S]
#               [--accel auto|tcg|kvm] [--kairos PATH] [--put PATH]... [--append ARGS] [--peer-nic]
#               (--script FILE | [--] COMMAND...)
#   --nodes 2 (1-8), --cpus 4 (a multiple of nodes), --mem 2048 MiB split evenly,
#   --nic-node 1 (0 with one node), --timeout 300 s for the whole boot and run,
#   --put PATH copies a file or directory into the guest's /job/in/,
#   --append ARGS adds kernel parameters (e.g. transparent_hugepage=never),
#   --peer-nic adds a second NIC on node 0's root bus, on the same link as the first.
# DIR gets stdout, stderr, status (the script's exit status), times (ready_s: boot, job_s:
# the script), files/ (what the script left in its working directory, $KAIROS_OUT),
# console.log (kernel and init messages), qemu.log, accel.
# Exit status: 0 the script ran (its own status is in DIR/status); 2 usage; 3 the machine
# cannot be built or started (reason on stderr); 4 timeout; 5 the guest stopped without a
# result (see DIR/console.log).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cache=${KAIROS_VM_CACHE:-$target/numa-vm}

usage() { sed -n '5,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
peer=0 nodes=2 cpus=4 mem=2048 nicnode='' timeout_s=300 accel=${KAIROS_VM_ACCEL:-auto} out='' script='' append='' kairos_args=() puts=()
while [ $# -gt 0 ]; do
  case $1 in
    --nodes|--cpus|--mem|--nic-node|--timeout|--accel|--kairos|--put|--out|--script|--append)
      [ $# -ge 2 ] || usage
      case $1 in
        --nodes) nodes=$2 ;; --cpus) cpus=$2 ;; --mem) mem=$2 ;; --nic-node) nicnode=$2 ;;
        --timeout) timeout_s=$2 ;; --accel) accel=$2 ;; --kairos) kairos_args=(--kairos "$2") ;;
        --put) puts+=("$2") ;; --out) out=$2 ;; --script) script=$2 ;; --append) append=$2 ;;
      esac
      shift 2 ;;
    --peer-nic) peer=1; shift ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
  esac
done
int() { [[ $1 =~ ^[0-9]+$ ]]; }
[ -n "$out" ] || usage
int "$nodes" && int "$cpus" && int "$mem" && int "$timeout_s" || usage
[ "$nodes" -ge 1 ] && [ "$nodes" -le 8 ] && [ "$cpus" -ge "$nodes" ] && [ $((cpus % nodes)) -eq 0 ] || usage
[ -n "$nicnode" ] || nicnode=$([ "$nodes" -gt 1 ] && echo 1 || echo 0)
int "$nicnode" && [ "$nicnode" -lt "$nodes" ] || usage
case $accel in auto|tcg|kvm) ;; *) usage ;; esac
if [ -n "$script" ]; then
  [ $# -eq 0 ] && [ -f "$script" ] || usage
elif [ $# -eq 0 ]; then
  usage
fi
for p in "${puts[@]}"; do [ -e "$p" ] || { echo "numa-vm: --put $p: no such file" >&2; exit 2; }; done

img=$(bash "$here/build.sh" "${kairos_args[@]}" | tail -n 1) || exit 3
mkdir -p "$out" "$cache/runs"
out=$(cd "$out" && pwd)
# Nothing of an earlier run may remain: the console is polled for the "result written" line.
rm -rf "$out"/{stdout,stderr,status,times,files,console.log,qemu.log,accel}
work=$(mktemp -d "$cache/runs/XXXXXX")
trap 'rm -rf "$work"' EXIT

# KVM only where it really boots this kernel (it does not under nested PVM); the verdict is
# kept per host kernel and QEMU version.
if [ "$accel" = auto ]; then
  accel=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    probe=$cache/accel-$( { uname -r; qemu-system-x86_64 --version | head -n 1; cat "$img/kernel-release" "$0"; } | sha256sum | cut -c1-12)
    if [ ! -f "$probe" ]; then
      if bash "$0" --accel kvm --timeout 60 --nodes 1 --cpus 1 --mem 256 "${kairos_args[@]}" --out "$work/probe" -- true >/dev/null 2>&1 &&
        [ "$(cat "$work/probe/status" 2>/dev/null)" = 0 ]; then echo kvm >"$probe"; else echo tcg >"$probe"; fi
    fi
    accel=$(cat "$probe")
  fi
fi
echo "$accel" >"$out/accel"

# The job archive, appended to the initramfs: the kernel unpacks both.
mkdir -p "$work/job/job/in"
if [ -n "$script" ]; then cp "$script" "$work/job/job/cmd"; else printf '%s\n' "$*" >"$work/job/job/cmd"; fi
for p in "${puts[@]}"; do cp -r "$p" "$work/job/job/in/"; done
(cd "$work/job" && find . | LC_ALL=C sort | /bin/busybox cpio -o -H newc >"$work/job.cpio" 2>/dev/null)
cat "$img/initramfs.cpio" "$work/job.cpio" >"$work/initrd"
# The result disk: sparse, so its size costs nothing until written.
truncate -s 8G "$work/result.img"

args=(-machine q35 -m "${mem}M" -smp "$cpus,sockets=$nodes,cores=$((cpus / nodes)),threads=1")
if [ "$accel" = kvm ]; then args+=(-accel kvm -cpu host); else args+=(-accel tcg,thread=multi -cpu max); fi
per=$((mem / nodes))
[ $((per * nodes)) -eq "$mem" ] || { echo "numa-vm: --mem $mem does not split evenly into $nodes nodes" >&2; exit 2; }
for ((i = 0; i < nodes; i++)); do
  args+=(-object "memory-backend-ram,id=mem$i,size=${per}M" -numa "node,nodeid=$i,memdev=mem$i"
         -numa "cpu,node-id=$i,socket-id=$i")
done
# Distances as on a two-socket server (local 10, remote 21); QEMU mirrors each pair.
for ((i = 0; i < nodes; i++)); do
  for ((j = i + 1; j < nodes; j++)); do args+=(-numa "dist,src=$i,dst=$j,val=21"); done
done
# The NIC behind its own PCIe root bus on node $nicnode; it has no network behind it.
args+=(-device "pxb-pcie,id=pxb1,bus_nr=128,numa_node=$nicnode,bus=pcie.0"
       -device "pcie-root-port,id=rp1,bus=pxb1,chassis=1"
       -netdev "hubport,id=nic0,hubid=0"
       -device "virtio-net-pci,bus=rp1,netdev=nic0,mac=52:54:00:4b:52:01")
# A second NIC on node 0's root bus, on the same hub: frames sent out of one arrive at the
# other, so a test can put inbound traffic on the first NIC.
[ "$peer" = 1 ] && args+=(-netdev "hubport,id=nic1,hubid=0"
       -device "virtio-net-pci,bus=pcie.0,netdev=nic1,mac=52:54:00:4b:52:02")
args+=(-drive "file=$work/result.img,if=none,format=raw,id=result"
       -device "virtio-blk-pci,bus=pcie.0,drive=result,serial=kairos-out")
args+=(-kernel "$img/vmlinuz" -initrd "$work/initrd" -append "console=ttyS0 quiet panic=-1 $append"
       -display none -nodefaults -no-reboot -serial "file:$out/console.log")

start=$(date +%s.%N)
SECONDS=0
qemu-system-x86_64 "${args[@]}" >"$out/qemu.log" 2>&1 &
qpid=$!
trap 'kill "$qpid" 2>/dev/null || true; rm -rf "$work"' EXIT
# Poll rather than wait: the guest sometimes stalls in its own power-off under TCG (an RCU
# stall on CPU 0 after the result is written, seen about once in 12 boots), so once it has
# said "result written" it gets 3 seconds and is then stopped from here.
written='' timed_out=''
while kill -0 "$qpid" 2>/dev/null; do
  if [ -z "$written" ] && grep -q 'kairos-vm: result written' "$out/console.log" 2>/dev/null; then
    written=$SECONDS
  fi
  if [ -n "$written" ] && [ $((SECONDS - written)) -ge 3 ]; then
    kill "$qpid" 2>/dev/null; break
  fi
  if [ "$SECONDS" -ge "$timeout_s" ]; then
    timed_out=1; kill "$qpid" 2>/dev/null; break
  fi
  sleep 0.1
done
rc=0
wait "$qpid" 2>/dev/null || rc=$?
wall=$(echo "$(date +%s.%N) $start" | awk '{printf "%.2f", $1 - $2}')
if [ -n "$timed_out" ]; then
  echo "numa-vm: timed out after ${timeout_s}s (console: $out/console.log)" >&2
  exit 4
elif [ "$rc" -ne 0 ] && [ -z "$written" ]; then
  echo "numa-vm: qemu failed (exit $rc): $(tail -n 3 "$out/qemu.log")" >&2
  exit 3
fi
tar -xf "$work/result.img" -C "$out" 2>/dev/null || true
if [ ! -f "$out/status" ]; then
  echo "numa-vm: the guest stopped without a result (qemu exit $rc); last console lines:" >&2
  tail -n 5 "$out/console.log" >&2
  { grep -v 'hub 0 is not connected' "$out/qemu.log" || true; } | tail -n 3 >&2
  exit 5
fi
echo "wall_s $wall" >>"$out/times"
