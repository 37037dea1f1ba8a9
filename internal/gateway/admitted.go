package gateway

import (
	"context"
	"time"

	"github.com/waitq/waitq/internal/clock"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/entry"
)

// Telling a user they are admitted: this file owns it. An admission
// reaches the sockets here by three routes, on three goroutines, and each
// ends in notifyAdmitted, which sends a socket its admitted frame once:
//
//   - the admissions channel (listenAdmissions): every admission any
//     service makes, within milliseconds;
//   - this gateway's own monitor tick (monitor.go MonitorTick): its
//     admissions at once, without waiting for their notice on the channel;
//   - the status round (status.go deliver, for rounds and greetings): a
//     user read holding a slot, which makes up for a notice missed and
//     tells a socket opened after the admission.
//
// The contract of the frame: docs/api.md (the admitted frame).

// listenAdmissions tells the sockets here of every admission made anywhere
// (this gateway's monitor, another's, the fast track of a join, a release,
// an admin change) within milliseconds. A notice missed while the
// subscription reconnects is made up by the next status round, which sends
// the admitted frame to any socket whose user holds a slot.
func (s *Server) listenAdmissions(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.store.SubscribeAdmissions(ctx, func(a queue.AdmissionNotice) {
			s.metrics.notices.Inc()
			s.notifyAdmittedUsers(a.EventID, a.Users, a.ExpiresAt)
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("admissions channel failed; status rounds deliver meanwhile", "err", err)
			clock.Sleep(ctx, time.Second)
		}
	}
}

// notifyAdmittedUsers sends each of users' sockets here its admitted
// frame, once (notifyAdmitted): the channel's and the tick's route.
func (s *Server) notifyAdmittedUsers(event string, users []string, expiresAt int64) {
	for _, u := range users {
		for _, c := range s.hub.user(event, u) {
			s.notifyAdmitted(c, expiresAt)
		}
	}
}

// notifyAdmitted sends c its admitted frame with a signed entry token,
// once, while the stay runs: every route above ends here. An admission
// told only after its stay ended (Redis froze between the admission and
// its reply) sends nothing: a token already dead would send the user to
// the shop to be refused; the next status tells them "expired".
//
// Once: the routes may find one admission at the same moment (a tick's
// admissions come back on the channel, and a status round may read them
// first), so the compare-and-swap of c.admitted lets exactly one caller
// through; the others return. It also stands for a frame the stream
// resumed here already received (c.resumed, its Last-Event-ID). c.admittedAt
// is set before the flag: a status read begun before it may predate the
// admission (socketView).
func (s *Server) notifyAdmitted(c *conn, expiresAt int64) {
	nowMs := s.now().UnixMilli()
	if expiresAt <= nowMs {
		s.metrics.admittedLate.Inc()
		return
	}
	c.admittedAt.CompareAndSwap(0, nowMs) // the first admission's time, before the flag
	if !c.admitted.CompareAndSwap(false, true) || expiresAt == c.resumed {
		return // sent before, here or to the stream this one resumes
	}
	token := s.entry.Sign(entry.Token{EventID: c.eventID, UserID: c.userID, Expires: expiresAt, IssuedAt: nowMs})
	f := AdmittedFrame{Type: "admitted", EventID: c.eventID, UserID: c.userID, EntryToken: token, ExpiresAt: expiresAt}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if e := s.eventOf(ctx, c.eventID); e != nil {
		f.RedirectURL = entry.AdmittedURL(e.TargetURL, c.returnTo, token)
	}
	cancel()
	s.writers.send(c, frame{kind: kindAdmitted, data: encode(f), id: admittedID(expiresAt)})
}
