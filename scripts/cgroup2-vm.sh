#!/bin/bash
# Runs loadlab's cgroup tests under cgroup v2 for real, in a VM whose only
# hierarchy is cgroup2 with cpuset, cpu and memory: for a machine whose own
# controllers are bound to cgroup v1 (a controller lives in one hierarchy
# at a time, machine-wide, so no namespace or second mount frees them).
#
#   scripts/cgroup2-vm.sh [TEST_REGEXP_OF_CMD_LOADLAB...]
#
# It builds static test binaries of internal/limits and cmd/loadlab, packs
# them with busybox into an initramfs, boots the kernel of /boot with it
# (qemu, TCG by default: nested KVM hung before the kernel's first line on
# the project's 2-core VM; LOADLAB_VM_ACCEL=kvm to try it), runs
# internal/limits' tests with LOADLAB_TEST_CGROUP=v2 (TestCgroupVersion
# then checks v2 was used) and each cmd/loadlab -test.run given (default:
# the limits tests that do not time the server), and exits 1 when any
# failed. Needs (Debian):
# qemu-system-x86 linux-image-amd64 busybox-static cpio. Under TCG the
# guest is several times slower: timing tests (TestLimitsCPUsScaleThroughput)
# say little there.
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${LOADLAB_VM_KERNEL:-$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)}
for need in qemu-system-x86_64 cpio gzip; do
	command -v "$need" >/dev/null || { echo "cgroup2-vm: $need is missing (apt-get install qemu-system-x86 cpio)" >&2; exit 2; }
done
busybox=$(command -v busybox || true)
if [ -z "$kernel" ] || [ -z "$busybox" ] || ! file "$busybox" | grep -q 'statically linked'; then
	echo "cgroup2-vm: needs a kernel in /boot and a static busybox (apt-get install linux-image-amd64 busybox-static)" >&2
	exit 2
fi
tests=("$@")
# By default the tests that do not time the server: under TCG the guest's
# CPUs are emulated, and cpus: 2 read 3.89x the throughput of cpus: 1.
[ ${#tests[@]} -gt 0 ] || tests=('^(TestLimitsMemoryOOMFailsTheRun|TestLimitsCgroupsGone.*|TestLimitsRefusedBeforeAnyLoad|TestMemoryFitPerWorker)$')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc,root,work}
cp "$busybox" "$root/bin/busybox"
CGO_ENABLED=0 go test -c -o "$root/limits.test" ./internal/limits/
CGO_ENABLED=0 go test -c -o "$root/loadlab.test" ./cmd/loadlab/
printf '%s\n' "${tests[@]}" > "$root/tests"
cat > "$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
echo "root:x:0:0:root:/root:/bin/sh" > /etc/passwd
echo "== cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
cd /work
LOADLAB_TEST_CGROUP=v2 /limits.test -test.v -test.count=1 2>&1
echo "== EXIT internal/limits $?"
while read -r t; do
	/loadlab.test -test.v -test.count=1 -test.run "$t" 2>&1
	echo "== EXIT cmd/loadlab $t $?"
done < /tests
echo "== cgroups left: $(ls -d /sys/fs/cgroup/loadlab-* 2>/dev/null)"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"
nice -n 5 timeout "${LOADLAB_VM_TIMEOUT:-1200}" qemu-system-x86_64 -accel "${LOADLAB_VM_ACCEL:-tcg}" -cpu max -m 1536 -smp 2 \
	-nographic -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet" | tr -d "\r" | tee "$work/console.log" | grep -E '^(== |--- |ok|FAIL|PASS)' || true
grep -q '^== cgroups left: *$' "$work/console.log" || { echo "cgroup2-vm: the VM did not finish, or left cgroups" >&2; exit 1; }
if grep -E '^== EXIT ' "$work/console.log" | grep -vqE ' 0$'; then
	echo "cgroup2-vm: tests failed under cgroup v2" >&2
	exit 1
fi
echo "cgroup2-vm: all passed under cgroup v2"
