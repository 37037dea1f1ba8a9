package gateway

import (
	"cmp"
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/mail"
	"github.com/waitq/waitq/internal/queue"
)

// Mailer sends the mails of being called (mail.Sender): Send queues one
// and reports whether it was queued.
type Mailer interface {
	Send(m mail.Message) bool
}

// sendMails mails, after a tick, those of ids's people who left an address
// and whose call, or early mail, is due (docs/api.md, "Being called"). A
// gateway without a mailer reads nothing: the addresses wait for one that
// mails. The addresses are never logged.
func (s *Server) sendMails(ctx context.Context, ids []string, now time.Time) {
	if s.mailer == nil || s.mails == nil || len(ids) == 0 {
		return
	}
	due, err := s.mails.DueMails(ctx, ids, now.UnixMilli())
	if err != nil {
		s.log.Warn("slot monitor: reading the mails due failed", "events", len(ids), "err", err)
		return
	}
	for _, m := range due {
		ev, err := s.events.Event(ctx, m.EventID)
		if err != nil {
			s.log.Warn("slot monitor: a mail's event could not be read; not sent", "mail", m, "err", err)
			continue
		}
		s.mailer.Send(s.composeMail(ev, m, now))
	}
}

// composeMail is m's mail: its resume link (a one-use token of the user's
// place, for the claim window of a call or the keep time of an early
// mail), in the event page's language, titled with the page's title.
func (s *Server) composeMail(ev queue.Event, m queue.Mail, now time.Time) mail.Message {
	away := cmp.Or(ev.Away, queue.DefaultAway())
	ttl := time.Duration(away.ClaimSeconds) * time.Second
	if m.Kind == queue.MailEarly {
		ttl = time.Duration(away.KeepSeconds) * time.Second
	}
	r := queue.NewResume(m.EventID, m.UserID, m.Place, now, ttl)
	link := strings.TrimRight(s.cfg.PublicURL, "/") + "/?event=" + url.QueryEscape(m.EventID) + "&resume=" + url.QueryEscape(s.tickets.SignResume(r))
	until := r.Expires
	if m.Kind == queue.MailCall {
		until = cmp.Or(m.Until, until) // the window's own end
	}
	t := mail.Turn{Title: ev.ID, Link: link, Early: m.Kind == queue.MailEarly, Ahead: m.Ahead, Until: time.UnixMilli(until)}
	if p := ev.Page; p != nil {
		t.Locale, t.Title = p.Locale, cmp.Or(p.Title, ev.ID)
	}
	msg := mail.Compose(m.Address, t)
	msg.Tag = m.EventID + " " + string(m.Kind)
	return msg
}
