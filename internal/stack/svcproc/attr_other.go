//go:build !linux

package svcproc

import "syscall"

// childProcAttr returns no special attributes outside Linux; the owner still
// stops its children on every exit path it controls.
func childProcAttr() *syscall.SysProcAttr { return nil }
