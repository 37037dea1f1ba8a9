// Package stack is the one way to start a local waitq stack: franz-go's
// kfake broker in this process (StartKafka), Redis (StartRedis: a
// redis-server child process of package redisproc, a Redis Cluster of
// package rediscluster, or miniredis where the caller allows it) and waitq's
// services in this process on a free loopback port, their readiness waited
// for (StartService, Group). The devstack (Devstack), the kfake-broker
// program (Broker), the measurements of internal/tools/loadgen and the test
// helpers of internal/testkit all start their parts here.
//
// stack imports internal/app to run services; internal/app imports no
// package of stack. Its subpackages are the parts: redisproc (a
// redis-server child), rediscluster (a cluster of them), svcproc (a built
// service binary as a child process, free addresses, the wait for /readyz)
// and promtext (reading /metrics).
//
// StartKafka, StartRedis, StartService and Go are safe for concurrent use,
// and so are the methods of a Redis, a Task and a Service; a Group is not.
package stack
