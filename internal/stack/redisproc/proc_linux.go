package redisproc

import "syscall"

// childProcAttr puts a child in its own process group, so a terminal's Ctrl-C
// reaches only the owner, which then stops the child itself, and has the kernel
// kill the child should the owner die without cleaning up.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
