// Package web is the waiting-room page people use, and a small admin view:
// plain HTML, CSS and JavaScript embedded in the binary, no build step. The
// gateway serves it; /config.json tells the page where producer-api is.
package web

import (
	"embed"
	"io/fs"
	"net/http"

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
	page := func(name string) echo.HandlerFunc {
		return func(c echo.Context) error {
			b, err := fs.ReadFile(sub, name)
			if err != nil {
				return err
			}
			return c.HTMLBlob(http.StatusOK, b)
		}
	}
	e.GET("/", page("index.html"))
	e.GET("/admin.html", page("admin.html"))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", files)))
	e.GET("/config.json", func(c echo.Context) error { return c.JSON(http.StatusOK, cfg) })
}
