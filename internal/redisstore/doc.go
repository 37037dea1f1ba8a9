// Package redisstore is the only package that speaks Redis. It owns the key
// layout of the external contract (keys.go), the Lua scripts that change the
// live state atomically (lua/*.lua, embedded), and the Store that the
// services use through the interfaces of package queue. With a recorder
// (Options.Recorder) the Store writes every change its scripts make on their own
// to the log before anyone is told of an admission; it also writes a
// rebuilt state (BeginRebuild, WriteRebuilt, EndRebuild).
//
// Every per-event key carries the event id as a hash tag, so each script
// touches one Redis Cluster slot; scripts never build keys themselves and
// never read the clock (the caller passes "now"). A Store is safe for
// concurrent use.
package redisstore
