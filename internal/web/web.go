// Package web is the waiting-room page people use, and the operators'
// console: plain HTML, CSS and JavaScript embedded in the binary, no build
// step. The gateway serves it; /config.json tells the page where
// producer-api is. Both pages are sent with a Content-Security-Policy that
// allows their own scripts and styles only (nothing inline), their worker,
// connections to the gateway and producer-api, and https images (an
// event's logo). Register is safe to call once per router.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

//go:embed static
var static embed.FS

// Config is what the page needs to know, served as /config.json.
type Config struct {
	// ProducerURL is producer-api's public base URL; empty when it shares
	// the page's origin (behind one proxy).
	ProducerURL  string `json:"producerUrl"`
	DefaultEvent string `json:"defaultEvent"`
}

// Register adds the page's routes to e.
func Register(e *echo.Echo, cfg Config) {
	sub, _ := fs.Sub(static, "static") // the directory is embedded above
	files := http.FileServer(http.FS(sub))
	producer := origin(cfg.ProducerURL)
	page := func(name string) echo.HandlerFunc {
		return func(c echo.Context) error {
			b, err := fs.ReadFile(sub, name)
			if err != nil {
				return err
			}
			c.Response().Header().Set("Content-Security-Policy", ContentSecurityPolicy(c.Request().Host, producer))
			return c.HTMLBlob(http.StatusOK, b)
		}
	}
	e.GET("/", page("index.html"))
	e.GET("/admin.html", page("admin.html"))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", files)))
	e.GET("/config.json", func(c echo.Context) error { return c.JSON(http.StatusOK, cfg) })
}

// ContentSecurityPolicy is the policy the pages are served with, for a
// page reached at host whose producer-api is at producerOrigin ("": the
// page's own origin): scripts, styles, the worker and fonts from the page's
// origin only, no inline script or style and no eval; connections to the
// page's origin (its WebSocket too) and producer-api; images from the
// page's origin and https (an event's logo, which must be https); no
// plugins, frames, forms elsewhere or <base>.
func ContentSecurityPolicy(host, producerOrigin string) string {
	connect := []string{"'self'"}
	if host != "" {
		connect = append(connect, "ws://"+host, "wss://"+host)
	}
	if producerOrigin != "" {
		connect = append(connect, producerOrigin)
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"worker-src 'self'",
		"style-src 'self'",
		"img-src 'self' https:",
		"font-src 'self'",
		"connect-src " + strings.Join(connect, " "),
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
		"object-src 'none'",
	}, "; ")
}

// origin returns the scheme://host of u, or "" when u is not an absolute
// http(s) URL.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}
