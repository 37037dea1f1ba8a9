package demoshop

import (
	"html/template"
	"net/http"
	"strconv"
)

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

// UserHeader is the header waitq-gate names the admitted user in.
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
{{- else if eq .Page "product"}}
<h1>{{.Product.Name}}</h1>
<p class="price">{{.Product.Price}}</p>
<form method="post" action="/order"><input type="hidden" name="product" value="{{.Product.ID}}"><button>Order</button></form>
{{- else if eq .Page "order"}}
<h1>Order placed</h1>
<p>Thank you{{with .User}}, {{.}}{{end}}.{{with .Product}} Your {{.Name}} is on its way.{{end}}</p>
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
}

// Handler returns the shop.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusOK, view{Page: "home", Title: "Today's drop", Products: Products})
	})
	mux.HandleFunc("GET /product/{id}", func(w http.ResponseWriter, r *http.Request) {
		p := find(r.PathValue("id"))
		if p == nil {
			render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
			return
		}
		render(w, r, http.StatusOK, view{Page: "product", Title: p.Name, Product: p})
	})
	order := func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusOK, view{Page: "order", Title: "Order placed", Product: find(r.FormValue("product"))})
	}
	mux.HandleFunc("GET /order", order)
	mux.HandleFunc("POST /order", order)
	mux.HandleFunc("GET /static/shop.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write([]byte(css))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusNotFound, view{Page: "missing", Title: "Not found"})
	})
	return mux
}

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
