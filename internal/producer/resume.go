package producer

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
)

// Resume links carry a place to another browser or device (docs/api.md,
// "Resume links"; docs/data.md, "Resume links").

// ResumeLinkResponse is the body of POST /v1/events/{eventId}/resume-link.
type ResumeLinkResponse struct {
	// URL is the waiting room page with ?event=<id>&resume=<token>.
	URL       string `json:"url"`
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expiresAt"`
	// QRSVG is URL as a QR code, an SVG document.
	QRSVG string `json:"qrSvg"`
}

// ResumeBody is the body of POST /v1/events/{eventId}/resume.
type ResumeBody struct {
	Token string `json:"token"`
}

// ResumeResponse is the 200 body of a resume: the new browser's place, and
// the ticket its page watches it with (as a join's).
type ResumeResponse struct {
	EventID string `json:"eventId"`
	UserID  string `json:"userId"`
	// Moved is false when the link was opened by its own user (nothing
	// moved: the same account on another device).
	Moved      bool   `json:"moved"`
	State      string `json:"state"`    // waiting, prequeue or called
	Position   int64  `json:"position"` // 1-based while waiting, else 0
	Total      int64  `json:"total"`
	ClaimUntil int64  `json:"claimUntil,omitempty"`
	Ticket     string `json:"ticket"`
	StatusURL  string `json:"statusUrl"`
}

// resumeLink answers POST …/resume-link: a signed link to the caller's
// place, for another browser or device, until the place's keep ends.
func (s *Server) resumeLink(c echo.Context) error {
	ev, who, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	held, err := s.resumes.Holding(c.Request().Context(), ev.ID, who.user)
	if err != nil {
		return resumeError(s, "place of "+who.user+" in "+ev.ID, err)
	}
	now := s.now()
	ttl := s.cfg.ResumeTTL
	if ev.Away.On() {
		ttl = time.Duration(ev.Away.KeepSeconds) * time.Second
	}
	r := queue.NewResume(ev.ID, who.user, held.Score, now, ttl)
	if held.ClaimUntil > 0 {
		r.Expires = min(r.Expires, held.ClaimUntil) // a called turn ends with its window
	}
	token := s.tickets.SignResume(r)
	link := s.resumeURL(c, ev.ID, token)
	return c.JSON(http.StatusOK, ResumeLinkResponse{URL: link, Token: token, ExpiresAt: r.Expires, QRSVG: qrSVG(link)})
}

// resumeURL is the page's address that resumes token: WAITQ_PUBLIC_URL's,
// else the calling page's origin (the page asks for its own link), else a
// relative one.
func (s *Server) resumeURL(c echo.Context, event, token string) string {
	base := s.cfg.PublicURL
	if base == "" {
		if o := c.Request().Header.Get(echo.HeaderOrigin); o != "" && (httpkit.OriginAllowed(o, s.cfg.AllowedOrigins) || sameHost(o, c.Request().Host)) {
			base = o + "/"
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		u = &url.URL{}
	}
	if u.Path == "" {
		u.Path = "/"
	}
	u.RawQuery = url.Values{"event": {event}, "resume": {token}}.Encode()
	return u.String()
}

// sameHost reports whether origin is of host.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Host == host
}

// resume answers POST …/resume: the place the link carries moves to the
// caller (move.lua), who is answered their place and a ticket.
func (s *Server) resume(c echo.Context) error {
	ev, who, err := s.queueRequest(c)
	if err != nil {
		return err
	}
	var body ResumeBody
	if err := httpkit.DecodeJSON(c.Request().Body, &body, queue.CodeInvalidBody, `{"token":…}`); err != nil {
		return err
	}
	now := s.now()
	r, err := s.tickets.VerifyResume(body.Token, ev.ID, now)
	switch {
	case errors.Is(err, queue.ErrTicketExpired):
		return queue.Errorf(queue.CodeResumeExpired, "this resume link has expired: ask the first device for a new one")
	case err != nil:
		return queue.Errorf(queue.CodeInvalidResume, "this resume link is not valid for event %s: %v", ev.ID, err)
	}
	ctx := c.Request().Context()
	moved, err := s.resumes.Move(ctx, queue.Move{Resume: r, To: who.user, NowMs: now.UnixMilli()})
	if err != nil {
		return resumeError(s, "move in "+ev.ID, err)
	}
	b, err := s.resumes.Status(ctx, ev.ID, []string{who.user}, now.UnixMilli())
	if err != nil || len(b.Places) != 1 {
		return httpkit.StoreError(s.log, "status after a move in "+ev.ID, errors.Join(err, errors.New("no place read")))
	}
	ticket := s.tickets.Sign(queue.Ticket{EventID: ev.ID, UserID: who.user, JoinedAt: now.UnixMilli(), Expires: now.Add(s.cfg.TicketTTL).UnixMilli()})
	out := ResumeResponse{EventID: ev.ID, UserID: who.user, Moved: !moved.Same, Total: b.Total, Ticket: ticket,
		StatusURL: s.cfg.StatusPath + ev.ID + "?ticket=" + url.QueryEscape(ticket)}
	switch p := b.Places[0]; {
	case p.Turn > 0:
		out.State, out.ClaimUntil = "called", p.Turn
	case p.Rank == queue.RankPrequeue:
		out.State = "prequeue"
	default:
		out.State, out.Position = "waiting", p.Rank+1
	}
	return c.JSON(http.StatusOK, out)
}

// resumeError is err as the client is told it: a domain error as it is,
// anything else the store's unavailability (logged).
func resumeError(s *Server, what string, err error) error {
	var e *queue.Error
	if errors.As(err, &e) {
		return err
	}
	return httpkit.StoreError(s.log, what, err)
}
