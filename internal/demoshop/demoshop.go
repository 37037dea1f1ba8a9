package demoshop

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/waitq/waitq/internal/clock"
)

// DefaultQueueTimeout is how long a page waits for a worker unless
// configured otherwise.
const DefaultQueueTimeout = 2 * time.Second

// Config is how much the shop can bear: like a real shop with a fixed pool
// of workers, its pages slow down as visitors crowd in, and once they wait
// too long it answers 503. The zero Config serves every page at once, at
// once. The demoshop program binds each setting to the WAITQ_ variable its
// comment names, and Validate names a bad setting by that variable.
type Config struct {
	// Workers is how many pages the shop serves at once; more wait for a
	// worker, first come first served (0: no limit), WAITQ_SHOP_WORKERS.
	Workers int
	// WorkTime is the time each page takes while it holds a worker, as a
	// shop's database and rendering would (0: only the rendering),
	// WAITQ_SHOP_WORK_TIME. Static files and /healthz take no worker and
	// no time.
	WorkTime time.Duration
	// QueueTimeout is the longest a page waits for a worker: past it the
	// visitor gets 503 (0: DefaultQueueTimeout), WAITQ_SHOP_QUEUE_TIMEOUT.
	QueueTimeout time.Duration
	// GatewayURL is ws-gateway's base URL, for the seated ticket's seat
	// holds (seats.go; empty: no seat map), WAITQ_SHOP_GATEWAY_URL.
	GatewayURL string
	// EventID is the event whose entry tokens the guard forwards, the
	// seats' event (required with GatewayURL), WAITQ_SHOP_EVENT_ID.
	EventID string
	// ShopToken is the seats' event's shop token, the credential of the
	// sales (an order confirms its seat with it; required with
	// GatewayURL), WAITQ_SHOP_TOKEN.
	ShopToken string
	// JoinToken is the members' presale (members.go): sign-in as a demo
	// customer and a link that mints a join token (zero: none).
	JoinToken JoinTokenConfig
}

// DefaultConfig returns the defaults of every setting: the values the
// demoshop program runs with when nothing is configured.
func DefaultConfig() Config { return Config{QueueTimeout: DefaultQueueTimeout} }

// withDefaults fills the zero settings of c from DefaultConfig.
func (c Config) withDefaults() Config {
	c.QueueTimeout = cmp.Or(c.QueueTimeout, DefaultConfig().QueueTimeout)
	return c
}

// Validate reports every setting of c that cannot work, each named by its
// WAITQ_ variable.
func (c Config) Validate() error {
	var errs []error
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_WORKERS=%d must not be negative (0: no limit)", c.Workers))
	}
	if c.WorkTime < 0 || c.WorkTime > time.Minute {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_WORK_TIME=%s must be between 0 and 1m", c.WorkTime))
	}
	if c.QueueTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WAITQ_SHOP_QUEUE_TIMEOUT=%s must be positive", c.QueueTimeout))
	}
	if (c.GatewayURL == "") != (c.EventID == "") {
		errs = append(errs, errors.New("WAITQ_SHOP_GATEWAY_URL and WAITQ_SHOP_EVENT_ID go together: both for a seat map, neither for none"))
	}
	if c.GatewayURL != "" && c.ShopToken == "" {
		errs = append(errs, errors.New("WAITQ_SHOP_TOKEN is required with WAITQ_SHOP_GATEWAY_URL: the event's shopToken, which an order's sale takes"))
	}
	if err := c.JoinToken.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Stats are the shop's workers at one moment.
type Stats struct {
	// InService counts the pages holding a worker now.
	InService int
	// Waiting counts the pages waiting for a worker now.
	Waiting int
	// Peak is the most pages that held a worker at once since the start.
	Peak int
}

// Product is one thing the shop sells.
type Product struct {
	ID    int
	Name  string
	Price string
}

// Products are the shop's catalogue.
var Products = []Product{
	{1, "Concert ticket, standing", "€49"},
	{2, "Concert ticket, seated", "€79"},
	{3, "Tour T-shirt", "€25"},
}

// UserHeader is the header waitq-guard names the admitted user in.
const UserHeader = "X-Waitq-User-Id"

var pages = template.Must(template.New("layout").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · Demo shop</title><link rel="stylesheet" href="/static/shop.css"></head>
<body>
<header><a href="/">Demo shop</a>{{with .User}} <span class="user">signed in through the waiting room as {{.}}</span>{{end}}</header>
<main>
{{- if eq .Page "home"}}
<h1>Today's drop</h1>
<ul>{{range .Products}}<li><a href="/product/{{.ID}}">{{.Name}}</a> {{.Price}}</li>{{end}}</ul>
{{- with .Members}}{{template "members" .}}{{end}}
{{- else if eq .Page "signin"}}{{template "signin" .Members}}
{{- else if eq .Page "product"}}
<h1>{{.Product.Name}}</h1>
<p class="price">{{.Product.Price}}</p>
{{- with .Seats}}{{template "seats" .}}{{else}}
<form method="post" action="/order"><input type="hidden" name="product" value="{{.Product.ID}}"><button>Order</button></form>{{end}}
{{- else if eq .Page "order"}}
<h1>Order placed</h1>
<p>Thank you{{with .User}}, {{.}}{{end}}.{{with .Product}} Your {{.Name}} is on its way.{{end}}{{with .Seat}} Seat {{.}} is yours.{{end}}</p>
<p><a href="/">Back to the shop</a></p>
{{- else}}
<h1>Not found</h1>
<p><a href="/">Back to the shop</a></p>
{{- end}}
</main>
</body>
</html>
`))

const css = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
header{display:flex;gap:1rem;align-items:baseline;border-bottom:1px solid #ccc;padding-bottom:.5rem}
.user{color:#555;font-size:.9rem}.price{font-size:1.5rem}button{font-size:1.1rem;padding:.4rem 1.2rem}
`

// view is what a page shows.
type view struct {
	Page, Title, User string
	Products          []Product
	Product           *Product
	Seats             *seatMap // the seated ticket's seat map (nil: none)
	Seat              string   // the seat an order bought
	Members           *members // the presale's sign-in (nil: no presale)
}

// Shop is the demo shop: an http.Handler.
type Shop struct {
	cfg     Config
	mux     *http.ServeMux
	workers chan struct{} // nil: no limit
	client  *http.Client  // calls ws-gateway (seats.go)

	mu    sync.Mutex
	stats Stats
}

// Handler returns the shop without a limit: New(Config{}).
func Handler() http.Handler {
	s, _ := New(Config{}) // the zero Config is valid
	return s
}

// New returns the shop of cfg, its zero settings taking DefaultConfig's, or
// an error when cfg is not valid.
func New(cfg Config) (*Shop, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Shop{cfg: cfg, mux: http.NewServeMux(), client: &http.Client{Timeout: 5 * time.Second}}
	if cfg.Workers > 0 {
		s.workers = make(chan struct{}, cfg.Workers)
	}
	page := func(pattern string, h http.HandlerFunc) { s.mux.Handle(pattern, s.work(h)) }
	page("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		v := view{Page: "home", Title: "Today's drop", Products: Products}
		if cfg.JoinToken.enabled() {
			v.Members = &members{Account: signedIn(r)}
		}
		render(w, r, http.StatusOK, v)
	})
	page("GET /product/{id}", func(w http.ResponseWriter, r *http.Request) {
		p := find(r.PathValue("id"))
		if p == nil {
			render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
			return
		}
		v := view{Page: "product", Title: p.Name, Product: p}
		if p.ID == SeatedProduct {
			v.Seats = s.seatMap(r)
		}
		render(w, r, http.StatusOK, v)
	})
	order := func(w http.ResponseWriter, r *http.Request) {
		if !s.confirmSeat(w, r) {
			return
		}
		render(w, r, http.StatusOK, view{Page: "order", Title: "Order placed", Product: find(r.FormValue("product")), Seat: r.FormValue("seat")})
	}
	s.seatRoutes(page)
	s.memberRoutes(page)
	page("GET /order", order)
	page("POST /order", order)
	page("/", func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
	})
	s.mux.HandleFunc("GET /static/shop.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write([]byte(css + seatsCSS))
	})
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns the shop's workers now.
func (s *Shop) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// work wraps a page: it waits for a worker (503 past the queue timeout),
// holds it for the work time, and renders the page. A visitor who leaves
// gives up the wait or the work.
func (s *Shop) work(page http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.acquire(w, r) {
			return
		}
		defer s.release()
		if s.cfg.WorkTime > 0 && !clock.Sleep(r.Context(), s.cfg.WorkTime) {
			return
		}
		page(w, r)
	})
}

// acquire takes a worker for r, waiting at most the queue timeout. It
// reports false when r got none; r was then answered 503, or left.
func (s *Shop) acquire(w http.ResponseWriter, r *http.Request) bool {
	if s.workers != nil {
		select {
		case s.workers <- struct{}{}:
		default:
			s.count(0, 1)
			t := time.NewTimer(s.cfg.QueueTimeout)
			defer t.Stop()
			select {
			case s.workers <- struct{}{}:
				s.count(0, -1)
			case <-t.C:
				s.count(0, -1)
				busy(w)
				return false
			case <-r.Context().Done():
				s.count(0, -1)
				return false
			}
		}
	}
	s.count(1, 0)
	return true
}

// release gives the worker back.
func (s *Shop) release() {
	s.count(-1, 0)
	if s.workers != nil {
		<-s.workers
	}
}

// count adds to the pages in service and waiting.
func (s *Shop) count(inService, waiting int) {
	s.mu.Lock()
	s.stats.InService += inService
	s.stats.Waiting += waiting
	s.stats.Peak = max(s.stats.Peak, s.stats.InService)
	s.mu.Unlock()
}

// busy answers a page that found no worker in time.
func busy(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(busyPage))
}

const busyPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Busy · Demo shop</title><link rel="stylesheet" href="/static/shop.css"></head>
<body><h1>The shop is busy</h1><p>Too many visitors at once. Try again in a moment.</p></body></html>
`

// find returns the product of id, nil when there is none.
func find(id string) *Product {
	n, err := strconv.Atoi(id)
	if err != nil {
		return nil
	}
	for i := range Products {
		if Products[i].ID == n {
			return &Products[i]
		}
	}
	return nil
}

// render writes the page of v, never cached: it may name the user.
func render(w http.ResponseWriter, r *http.Request, status int, v view) {
	v.User = r.Header.Get(UserHeader)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "private, no-store")
	w.WriteHeader(status)
	_ = pages.Execute(w, v)
}
