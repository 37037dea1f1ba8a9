package chaos

import (
	"slices"
	"strings"
	"testing"
)

// withSales adds seat holds to clean()'s history, every promise kept: a
// holds s1 and the shop sells it to a; b holds s2 and tries to buy it alone
// twice (no bearer, then its entry token as the bearer), refused both
// times, then gives it back; c holds s3, the shop's first confirm gets no
// answer, its repeat 200; a forged confirm of a's s1 by b is refused too.
func withSales() (*History, Config) {
	h, cfg := clean()
	for _, x := range []ItemHold{
		{Event: "e", User: "a", Item: "s1", Op: "hold", Sent: at(150), Outcome: "201"},
		{Event: "e", User: "b", Item: "s1", Op: "hold", Sent: at(250), Outcome: "409 item_sold"},
		{Event: "e", User: "b", Item: "s2", Op: "hold", Sent: at(260), Outcome: "201"},
		{Event: "e", User: "b", Item: "s2", Op: "give-back", Sent: at(400), Outcome: "204"},
		{Event: "e", User: "c", Item: "s3", Op: "hold", Sent: at(350), Outcome: "201"},
	} {
		h.AddItemHold(x)
	}
	for _, s := range []Sale{
		{Event: "e", User: "a", Item: "s1", Via: ViaShop, Sent: at(160), Answered: at(170), Outcome: "200", SoldTo: "a"},
		{Event: "e", User: "b", Item: "s2", Via: "forged: none", Sent: at(270), Answered: at(271), Outcome: "401 unauthorized"},
		{Event: "e", User: "b", Item: "s2", Via: "forged: entry token", Sent: at(280), Answered: at(281), Outcome: "401 unauthorized"},
		{Event: "e", User: "b", Item: "s1", Via: "forged: made-up", Sent: at(290), Answered: at(291), Outcome: "401 unauthorized"},
		{Event: "e", User: "c", Item: "s3", Via: ViaShop, Sent: at(360), Outcome: NoAnswer},
		{Event: "e", User: "c", Item: "s3", Via: ViaShop, Sent: at(380), Answered: at(390), Outcome: "200", SoldTo: "c"},
	} {
		h.AddSale(s)
	}
	f := cfg.Final["e"]
	f.Sold = map[string]string{"s1": "a", "s3": "c"}
	cfg.Final["e"] = f
	return h, cfg
}

func TestCleanSalesPass(t *testing.T) {
	h, cfg := withSales()
	r := Check(h, cfg)
	if v := r.Violations(); len(v) != 0 {
		t.Fatalf("violations in a clean history of sales:\n%s", strings.Join(v, "\n"))
	}
	if r.ItemsSold != 2 || r.SoldUnanswered != 0 || r.Sales[ViaShop]["200"] != 2 || r.Sales["forged: none"]["401 unauthorized"] != 1 {
		t.Errorf("items sold %d (unanswered %d), confirms %v", r.ItemsSold, r.SoldUnanswered, r.Sales)
	}
	md := r.Markdown()
	for _, want := range []string{
		"| items answered sold to two buyers with no rebuild between | 0 |",
		"| items sold at the end not through the shop (of 2 sold) | 0 |",
		"| forged confirms answered 200 | 0 |",
		"| confirm, forged: entry token | 401 unauthorized | 1 |",
		"| confirm, shop | error | 1 |",
		"| item hold | 409 item_sold | 1 |",
		"| item give-back | 204 | 1 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}

	// A sale whose shop confirms all went unanswered may stand: reported.
	h.Sales = slices.DeleteFunc(h.Sales, func(s Sale) bool { return s.Item == "s3" && s.Sold() })
	if r := Check(h, cfg); len(r.Violations()) != 0 || r.SoldUnanswered != 1 {
		t.Errorf("s3 sold on an unanswered confirm: %d reported, violations %q", r.SoldUnanswered, r.Violations())
	}
}

// Each broken promise of the seat holds is caught, and only that one.
func TestEachSalesViolationIsFound(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(h *History, cfg *Config)
		want   string
	}{
		{"sold to two buyers", func(h *History, cfg *Config) {
			h.AddSale(Sale{Event: "e", User: "b", Item: "s1", Via: ViaShop, Sent: at(500), Answered: at(510), Outcome: "200", SoldTo: "b"})
		}, "sold twice: e/s1: sold to a at"},
		{"sold to two buyers, a rebuild long before", func(h *History, cfg *Config) {
			h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(100), Healed: at(140)})
			h.AddSale(Sale{Event: "e", User: "b", Item: "s1", Via: ViaShop, Sent: at(500), Answered: at(510), Outcome: "200", SoldTo: "b"})
		}, "sold twice: e/s1"},
		{"sold at the end to a buyer the shop never confirmed", func(h *History, cfg *Config) {
			cfg.Final["e"].Sold["s2"] = "b"
		}, "sold without the shop: e/s2: sold to b"},
		{"sold at the end to another buyer than the shop's", func(h *History, cfg *Config) {
			cfg.Final["e"].Sold["s1"] = "b"
		}, "sold without the shop: e/s1: sold to b"},
		{"sold at the end on a refused shop confirm", func(h *History, cfg *Config) {
			h.AddSale(Sale{Event: "e", User: "b", Item: "s2", Via: ViaShop, Sent: at(300), Answered: at(301), Outcome: "403 not_holder"})
			cfg.Final["e"].Sold["s2"] = "b"
		}, "sold without the shop: e/s2: sold to b at the end, never confirmed by the shop for them (1 shop confirms"},
		{"a forged confirm answered 200", func(h *History, cfg *Config) {
			h.Sales[1].Outcome, h.Sales[1].SoldTo = "200", "b"
		}, "forged confirm answered 200: e/s2: a confirm by b (forged: none)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, cfg := withSales()
			c.break_(h, &cfg)
			r := Check(h, cfg)
			v := slices.DeleteFunc(r.Violations(), func(s string) bool { return strings.HasPrefix(s, "not recovered: rebuild") })
			if len(v) != 1 || !strings.Contains(v[0], c.want) {
				t.Fatalf("violations %q, want one with %q", v, c.want)
			}
		})
	}
}

// A second buyer answered 200 for an item after a rebuild that began
// between the two answers: the first sale was lost with Redis (data.md),
// excused and reported apart.
func TestASaleARebuildLostIsExcused(t *testing.T) {
	h, cfg := withSales()
	h.AddFault(Fault{Kind: Rebuild, Target: "redis", Role: Redis, Start: at(450), Healed: at(480)})
	h.AddSale(Sale{Event: "e", User: "b", Item: "s1", Via: ViaShop, Sent: at(500), Answered: at(510), Outcome: "200", SoldTo: "b"})
	r := Check(h, cfg)
	if len(r.SoldTwice) != 0 || len(r.SoldTwiceRebuilt) != 1 || !strings.HasPrefix(r.SoldTwiceRebuilt[0], "e/s1: sold to a at") {
		t.Fatalf("sold twice %q, excused %q; want s1 excused by the rebuild", r.SoldTwice, r.SoldTwiceRebuilt)
	}
	md := r.Markdown()
	for _, want := range []string{"| items answered sold to two buyers with a rebuild between: a sale Redis lost (reported, not a violation) | 1 |", "Sales a rebuild lost (excused):"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	// Either buyer may hold it at the end: both were sold it by the shop.
	cfg.Final["e"].Sold["s1"] = "b"
	if r := Check(h, cfg); len(r.SoldWithoutShop) != 0 || len(r.SoldTwice) != 0 {
		t.Errorf("s1 at b after the rebuild: %q %q", r.SoldWithoutShop, r.SoldTwice)
	}
}
