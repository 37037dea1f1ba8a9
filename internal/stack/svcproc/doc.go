// Package svcproc is the one home of running a waitq service for a test or a
// measurement: a free loopback address to give it, the wait until its
// /readyz answers, and Proc, a built service binary run as a child process
// with an environment, its output captured, stopped with SIGTERM or killed
// with SIGKILL, and restarted on the same address.
//
// FreeAddr and WaitReady are safe for concurrent use, and so are the methods
// of a Proc.
package svcproc
