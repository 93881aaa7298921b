package testenv

import "syscall"

// dieWithParent makes a started server die with the test binary, even when
// the binary is killed before its cleanups run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
