//go:build linux

package tenant

import "golang.org/x/sys/unix"

// abi is one system-call ABI a process of an architecture may use: its
// audit arch and the numbers of the calls that can make a user namespace.
type abi struct {
	arch                   uint32
	unshare, clone, clone3 uint32
	x32                    bool // x86_64: calls with the x32 bit set are another ABI
}

// abis are the ABIs of a GOARCH the filter knows; the compat ABIs are
// listed too, or a 32-bit call (int 0x80) would pass by other numbers.
var abis = map[string][]abi{
	"amd64": {
		{arch: unix.AUDIT_ARCH_X86_64, unshare: 272, clone: 56, clone3: 435, x32: true},
		{arch: unix.AUDIT_ARCH_I386, unshare: 310, clone: 120, clone3: 435},
	},
	"arm64": {
		{arch: unix.AUDIT_ARCH_AARCH64, unshare: 97, clone: 220, clone3: 435},
		{arch: unix.AUDIT_ARCH_ARM, unshare: 337, clone: 120, clone3: 435},
	},
}

// seccomp_data offsets: nr, arch, then (after the instruction pointer)
// the arguments, 8 bytes each; the low half of the first argument is at
// 16 on the little-endian architectures above.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	x32Bit  = 0x40000000
)

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// denyUserNS is a seccomp program that fails unshare and clone with
// CLONE_NEWUSER (EPERM) and clone3, whose flags sit behind a pointer a
// filter cannot read, with ENOSYS, so that libc and Go fall back to clone
// (as Docker's default profile does). A call of an ABI not listed for
// goarch gets ENOSYS; on an architecture the filter does not know, it
// denies user namespaces by nothing (nil: no filter is installed).
func denyUserNS(goarch string) []unix.SockFilter {
	list := abis[goarch]
	if len(list) == 0 {
		return nil
	}
	var p []unix.SockFilter
	for _, a := range list {
		p = append(p, abiBlock(a)...)
	}
	return append(p, ret(retENOSYS))
}

// abiBlock checks the arch and, when it is a's, decides; the arch check
// jumps past the block when it differs.
func abiBlock(a abi) []unix.SockFilter {
	var body []unix.SockFilter
	body = append(body, load(offNr))
	if a.x32 {
		body = append(body, jump(unix.BPF_JGE, x32Bit, 0, 1), ret(retENOSYS))
	}
	body = append(body,
		jump(unix.BPF_JEQ, a.clone3, 0, 1), ret(retENOSYS),
		jump(unix.BPF_JEQ, a.unshare, 1, 0),
		jump(unix.BPF_JEQ, a.clone, 0, 3),
		load(offArg0),
		jump(unix.BPF_JSET, unix.CLONE_NEWUSER, 0, 1), ret(retEPERM),
		ret(retAllow),
	)
	head := []unix.SockFilter{load(offArch), jump(unix.BPF_JEQ, a.arch, 0, uint8(len(body)))}
	return append(head, body...)
}

func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

func jump(op uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

func ret(v uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }
