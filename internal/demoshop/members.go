package demoshop

import (
	"crypto/rand"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/pkg/jointoken"
)

// The members' presale: with Config.JoinToken, a visitor signs in as one
// of the DemoAccounts (GET and POST /signin, a cookie; POST /signout), and
// the presale link (GET /presale) mints a join token for that account
// (sub = the account, aud = the presale's event, exp in JoinTokenLifetime,
// a random jti) and sends the browser to the waiting room page with it:
// <RoomURL>?event=<EventID>&joinToken=<token>&returnTo=<the shop>.

// DemoAccounts are the customers one may sign in as.
var DemoAccounts = []string{"alice", "bob", "carol"}

// AccountCookie holds the signed-in demo account.
const AccountCookie = "demoshop_account"

// JoinTokenLifetime is how long a presale link's join token is valid.
const JoinTokenLifetime = 10 * time.Minute

// JoinTokenConfig is the members' presale: the key the shop mints join
// tokens with and the event they admit to. The zero JoinTokenConfig has
// no presale.
type JoinTokenConfig struct {
	// KeyID is the key's kid, as registered on the event.
	KeyID string
	// Secret is the HS256 secret, at least 32 bytes, as registered on the
	// event (there in base64url).
	Secret []byte
	// RoomURL is the waiting room page (ws-gateway's page, e.g.
	// http://127.0.0.1:8081/).
	RoomURL string
	// EventID is the members-only event: its joinToken.required set, the
	// key above among its keys.
	EventID string
	// ShopURL is where the waiting room sends the admitted customer back
	// (returnTo; empty: the shop's address as the request names it).
	ShopURL string
}

// enabled reports whether c configures a presale at all.
func (c JoinTokenConfig) enabled() bool {
	return c.KeyID != "" || c.Secret != nil || c.RoomURL != "" || c.EventID != "" || c.ShopURL != ""
}

// validate reports why c cannot mint tokens.
func (c JoinTokenConfig) validate() error {
	if !c.enabled() {
		return nil
	}
	var errs []error
	if _, err := jointoken.HMACKey(c.KeyID, c.Secret); err != nil {
		errs = append(errs, errors.New("JoinToken: "+strings.TrimPrefix(err.Error(), "jointoken: ")))
	}
	if !absoluteHTTP(c.RoomURL) {
		errs = append(errs, errors.New("JoinToken.RoomURL must be the waiting room page's absolute http(s) URL"))
	}
	if !queue.ValidEventID(c.EventID) {
		errs = append(errs, errors.New("JoinToken.EventID must be the presale's event id"))
	}
	if c.ShopURL != "" && !absoluteHTTP(c.ShopURL) {
		errs = append(errs, errors.New("JoinToken.ShopURL must be an absolute http(s) URL, or empty"))
	}
	return errors.Join(errs...)
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// members is the presale's part of a page.
type members struct {
	Account  string   // the signed-in account ("": none)
	Accounts []string // the sign-in page's choices
	Next     string   // where sign-in goes on
}

var _ = template.Must(pages.New("members").Parse(`
<section id="members">
{{- if .Account}}
<p>Signed in as <b id="account">{{.Account}}</b>. <a id="presale" href="/presale">Members' presale</a></p>
<form method="post" action="/signout"><button>Sign out</button></form>
{{- else}}
<p><a id="signin" href="/signin?next=/presale">Sign in</a> for the members' presale.</p>
{{- end}}
</section>`))

var _ = template.Must(pages.New("signin").Parse(`
<h1>Sign in</h1>
<p>A demo: choose a customer.</p>
<form method="post" action="/signin"><input type="hidden" name="next" value="{{.Next}}">
{{- range .Accounts}}<button name="account" value="{{.}}">{{.}}</button> {{end}}</form>`))

// memberRoutes adds the sign-in and the presale routes, when configured.
func (s *Shop) memberRoutes(page func(string, http.HandlerFunc)) {
	if !s.cfg.JoinToken.enabled() {
		return
	}
	page("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusOK, view{Page: "signin", Title: "Sign in", Members: &members{Accounts: DemoAccounts, Next: next(r)}})
	})
	page("POST /signin", func(w http.ResponseWriter, r *http.Request) {
		account := r.FormValue("account")
		if !slices.Contains(DemoAccounts, account) {
			render(w, r, http.StatusBadRequest, view{Page: "signin", Title: "Sign in", Members: &members{Accounts: DemoAccounts, Next: next(r)}})
			return
		}
		http.SetCookie(w, &http.Cookie{Name: AccountCookie, Value: account, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, next(r), http.StatusSeeOther)
	})
	page("POST /signout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: AccountCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	page("GET /presale", s.presale)
}

// presale sends the signed-in account to the waiting room with a join
// token, and anyone else to sign in first.
func (s *Shop) presale(w http.ResponseWriter, r *http.Request) {
	account := signedIn(r)
	if account == "" {
		http.Redirect(w, r, "/signin?next=/presale", http.StatusSeeOther)
		return
	}
	c := s.cfg.JoinToken
	key, _ := jointoken.HMACKey(c.KeyID, c.Secret) // New validated it
	now := time.Now()
	token, err := jointoken.Mint(key, jointoken.Claims{Subject: account, EventID: c.EventID,
		IssuedAt: now, Expiry: now.Add(JoinTokenLifetime), ID: rand.Text()})
	if err != nil {
		http.Error(w, "minting the join token failed", http.StatusInternalServerError)
		return
	}
	returnTo := c.ShopURL
	if returnTo == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		returnTo = scheme + "://" + r.Host + "/"
	}
	room, _ := url.Parse(c.RoomURL) // validated
	q := room.Query()
	q.Set("event", c.EventID)
	q.Set("joinToken", token)
	q.Set("returnTo", returnTo)
	room.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, room.String(), http.StatusSeeOther)
}

// signedIn returns the demo account r's cookie names, "" for none.
func signedIn(r *http.Request) string {
	if c, err := r.Cookie(AccountCookie); err == nil && slices.Contains(DemoAccounts, c.Value) {
		return c.Value
	}
	return ""
}

// next is where sign-in goes on: a path of this shop, "/" by default.
func next(r *http.Request) string {
	if n := r.FormValue("next"); strings.HasPrefix(n, "/") && !strings.HasPrefix(n, "//") && !strings.ContainsAny(n, `\`) {
		return n
	}
	return "/"
}
