//go:build !linux

package redisproc

import "syscall"

// childProcAttr returns no special attributes outside Linux; the owner still
// kills its children on every exit path it controls.
func childProcAttr() *syscall.SysProcAttr { return nil }
