package producer

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/waitq/waitq/internal/httpkit"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/jointoken"
)

// VisitorCookie is the cookie that carries a visitor's identity
// (queue.Visitor, signed): HttpOnly, SameSite=Lax, Secure, Path=/, no
// Domain. The __Host- prefix makes browsers refuse it from anyone but this
// host over HTTPS, so a sibling subdomain cannot plant one that is read
// instead (an identity of its choosing, or a broken one that locks the
// visitor out).
const VisitorCookie = "__Host-waitq_visitor"

// InsecureVisitorCookie is the visitor cookie's name with
// WAITQ_COOKIE_INSECURE (plain HTTP on a developer's machine), where
// browsers refuse the __Host- prefix without Secure.
const InsecureVisitorCookie = "waitq_visitor"

// visitorCookie is the name of the visitor cookie this server sets and
// reads: the one name, never the other.
func (s *Server) visitorCookie() string {
	if s.cfg.CookieInsecure {
		return InsecureVisitorCookie
	}
	return VisitorCookie
}

// JoinTokenHeader carries a join token the shop signed (docs/integration.md).
const JoinTokenHeader = "X-Waitq-Join-Token"

// VisitorResponse is the body of POST /v1/visitor.
type VisitorResponse struct {
	VisitorID string `json:"visitorId"`
	ExpiresAt int64  `json:"expiresAt"`
}

// visitor answers POST /v1/visitor: the visitor identity the request's
// cookie carries (200), or a new one in a new cookie (201) when it carries
// none, or one that does not verify. Nobody chooses their id.
func (s *Server) visitor(c echo.Context) error {
	now := s.now()
	if ck, err := c.Cookie(s.visitorCookie()); err == nil {
		if v, err := s.tickets.VerifyVisitor(ck.Value, now); err == nil {
			return c.JSON(http.StatusOK, VisitorResponse{VisitorID: v.ID, ExpiresAt: v.Expires})
		}
	}
	v := queue.NewVisitor(now, s.cfg.VisitorTTL)
	c.SetCookie(&http.Cookie{
		Name: s.visitorCookie(), Value: s.tickets.SignVisitor(v), Path: "/",
		Expires: time.UnixMilli(v.Expires), MaxAge: int(s.cfg.VisitorTTL.Seconds()),
		HttpOnly: true, Secure: !s.cfg.CookieInsecure, SameSite: http.SameSiteLaxMode,
	})
	s.metrics.visitors.Inc()
	return c.JSON(http.StatusCreated, VisitorResponse{VisitorID: v.ID, ExpiresAt: v.Expires})
}

// identity is who a join, leave or challenge is made by, and how waitq
// knows it.
type identity struct {
	user string
	// token is the join token's one-time id and end, when the join token
	// named the user and has a jti.
	token *queue.Spend
}

// identify returns who makes a request on ev, in this order: the join
// token the shop signed (X-Waitq-Join-Token: its subject, an account, has
// one place; required when the event says so), X-User-Id when a trusted
// proxy sets it (WAITQ_TRUST_USER_HEADER; from another peer it is ignored),
// the visitor identity of the visitor cookie. None of them:
// missing_identity.
func (s *Server) identify(c echo.Context, ev queue.Event) (identity, error) {
	now := s.now()
	if tok := c.Request().Header.Get(JoinTokenHeader); tok != "" || (ev.JoinToken != nil && ev.JoinToken.Required) {
		switch {
		case ev.JoinToken == nil:
			return identity{}, queue.Errorf(queue.CodeInvalidJoinToken, "event %s takes no join tokens", ev.ID)
		case tok == "":
			return identity{}, queue.Errorf(queue.CodeJoinTokenRequired, "event %s is for invited customers: the shop's join token is required (%s)", ev.ID, JoinTokenHeader)
		}
		claims, err := ev.JoinToken.Verify(tok, ev.ID, now)
		if err != nil {
			return identity{}, err
		}
		if err := queue.CheckNamedUserID(claims.Subject); err != nil {
			return identity{}, queue.Errorf(queue.CodeInvalidJoinToken, "a join token's sub must be a valid user id not starting with %q: those are visitor ids", queue.VisitorPrefix)
		}
		id := identity{user: claims.Subject}
		if claims.ID != "" {
			// Remembered as long as the token is taken: its exp and the
			// leeway after it.
			id.token = &queue.Spend{Kind: queue.SpendJoinToken, ID: claims.ID, Until: claims.Expiry.Add(jointoken.Leeway)}
		}
		return id, nil
	}
	if s.cfg.TrustUserHeader && s.proxies.PeerTrusted(c.Request()) {
		if user := c.Request().Header.Get(httpkit.UserHeader); user != "" {
			return identity{user: user}, queue.CheckNamedUserID(user)
		}
	}
	ck, err := c.Cookie(s.visitorCookie())
	if err != nil {
		if s.cfg.TrustUserHeader {
			return identity{}, queue.Errorf(queue.CodeMissingUserID, "the %s header (believed from a trusted proxy only) or a visitor identity (POST /v1/visitor) is required", httpkit.UserHeader)
		}
		return identity{}, queue.Errorf(queue.CodeMissingIdentity, "no visitor identity: POST /v1/visitor first (the %s cookie)", s.visitorCookie())
	}
	v, err := s.tickets.VerifyVisitor(ck.Value, now)
	if err != nil {
		return identity{}, err
	}
	return identity{user: v.ID}, nil
}
