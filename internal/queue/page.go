package queue

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The waiting room page's branding: what an operator puts on the page
// people wait on. Everything in it is text the page shows escaped (as text
// nodes, never markup); it is public (GET /v1/events/{id}).

// Limits on an event's page, in characters (Unicode code points).
const (
	MaxPageTitle    = 120
	MaxPageMessage  = 2000
	MaxPageTemplate = 8000
	MaxPageLogoURL  = 1024
	MaxPageLocale   = 35
)

// PagePlaceholders are the names a page template may use as {{name}}: the
// page fills them in as text, and those that change (position, total,
// ahead, eta, updated) on every status it receives. Any other {{…}} is an
// invalid_config error, so a typo is found when the event is saved.
var PagePlaceholders = []string{"title", "message", "position", "total", "ahead", "eta", "updated"}

// Page is an event's waiting room page: its title, message, logo, accent
// colour, an optional template of the message area and the language shown
// when neither the address (?lang=) nor the browser asks for one the page
// has. The zero Page is the plain page.
type Page struct {
	// Title replaces the event id as the page's heading and tab title.
	Title string `json:"title,omitempty"`
	// Message is a paragraph (or several, split by blank lines) shown
	// under the title: what is on sale, what to expect.
	Message string `json:"message,omitempty"`
	// LogoURL is an absolute https URL of an image shown above the title
	// (the page's Content-Security-Policy allows https images).
	LogoURL string `json:"logoUrl,omitempty"`
	// AccentColor is the colour of the page's band, buttons and progress
	// bars, #rrggbb; the page picks black or white text on it, whichever
	// contrasts more.
	AccentColor string `json:"accentColor,omitempty"`
	// Template, when set, replaces the message area: plain text with
	// {{placeholder}}s (PagePlaceholders), paragraphs split by blank lines.
	Template string `json:"template,omitempty"`
	// Locale is the page's default language as a BCP 47 tag ("ko",
	// "en-US"), used when neither ?lang= nor the browser's languages name
	// one the page speaks.
	Locale string `json:"locale,omitempty"`
}

var (
	accentColorRe = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)
	localeRe      = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)
	placeholderRe = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)
)

// Validate reports the first invalid field of p as a CodeInvalidConfig
// error; a nil page is valid (the plain page).
func (p *Page) Validate() error {
	if p == nil {
		return nil
	}
	for _, f := range []struct {
		name, v   string
		max       int
		multiline bool
	}{
		{"title", p.Title, MaxPageTitle, false},
		{"message", p.Message, MaxPageMessage, true},
		{"template", p.Template, MaxPageTemplate, true},
	} {
		if err := checkPageText(f.name, f.v, f.max, f.multiline); err != nil {
			return err
		}
	}
	switch {
	case p.LogoURL != "" && checkURL("page.logoUrl", p.LogoURL, MaxPageLogoURL, "https") != nil:
		return checkURL("page.logoUrl", p.LogoURL, MaxPageLogoURL, "https")
	case p.AccentColor != "" && !accentColorRe.MatchString(p.AccentColor):
		return Errorf(CodeInvalidConfig, "page.accentColor must be a colour as #rrggbb, such as #0b5cad")
	case p.Locale != "" && (len(p.Locale) > MaxPageLocale || !localeRe.MatchString(p.Locale)):
		return Errorf(CodeInvalidConfig, "page.locale must be a language tag such as ko, en or en-US")
	}
	for _, m := range placeholderRe.FindAllStringSubmatch(p.Template, -1) {
		if !knownPlaceholder(m[1]) {
			return Errorf(CodeInvalidConfig, "page.template uses {{%s}}; the placeholders are {{%s}}", m[1], strings.Join(PagePlaceholders, "}}, {{"))
		}
	}
	return nil
}

func knownPlaceholder(name string) bool {
	for _, p := range PagePlaceholders {
		if p == name {
			return true
		}
	}
	return false
}

// checkPageText reports whether v can be the page's field name: at most max
// characters of valid UTF-8 with no control characters (but line breaks
// and tabs when multiline).
func checkPageText(name, v string, max int, multiline bool) error {
	if !utf8.ValidString(v) {
		return Errorf(CodeInvalidConfig, "page.%s must be UTF-8 text", name)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return Errorf(CodeInvalidConfig, "page.%s must be at most %d characters, not %d", name, max, n)
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			return Errorf(CodeInvalidConfig, "page.%s must not hold control characters%s", name, map[bool]string{true: " (line breaks and tabs are fine)", false: " or line breaks"}[multiline])
		}
	}
	return nil
}

// checkURL reports whether u is an absolute URL of one of schemes with a
// host and no user information, at most max characters, as an
// invalid_config error naming field.
func checkURL(field, u string, max int, schemes ...string) error {
	p, err := url.Parse(u)
	if len(u) > max {
		return Errorf(CodeInvalidConfig, "%s must be at most %d characters", field, max)
	}
	ok := err == nil && p.Host != "" && p.User == nil && p.Opaque == ""
	if ok {
		ok = false
		for _, s := range schemes {
			ok = ok || p.Scheme == s
		}
	}
	if !ok {
		return Errorf(CodeInvalidConfig, "%s must be an absolute %s URL, such as %s://shop.example/sale", field, strings.Join(schemes, " or "), schemes[len(schemes)-1])
	}
	return nil
}
