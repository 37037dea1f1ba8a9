// Package mail sends the mails of being called (docs/api.md, "Being
// called"): Compose builds one in the event page's language, and a Sender
// sends it through an SMTP relay (optional STARTTLS, AUTH PLAIN, timeouts)
// from a bounded queue, retrying a temporary failure. Nothing here logs an
// address: a failure is logged with the message's Tag and the SMTP status.
// Send is safe concurrently; Run is called once.
package mail
