package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// checkSales proves the seat holds' promises (api.md, seat holds) over the
// confirms the buyers and the shop sent and the items sold at the end:
//   - no item answered sold (200) to two different buyers, unless a rebuild
//     began between the two answers (from the first's sending to the
//     second's answer): Redis lost the first sale there, and another buyer
//     could hold and buy the item (data.md, a sale Redis loses); those are
//     reported apart, excused;
//   - every item sold at the end was sold to its buyer through the shop: a
//     confirm with the shop's token for that buyer and item answered 200
//     (or, reported apart, one never answered: it may have sold);
//   - a confirm without the shop's token (forged) is never answered 200.
func (r *Report) checkSales(h *History, cfg Config) {
	for _, x := range h.ItemHolds {
		if r.ItemHolds[x.Op] == nil {
			r.ItemHolds[x.Op] = map[Outcome]int{}
		}
		r.ItemHolds[x.Op][x.Outcome]++
	}
	type itemKey struct{ event, item string }
	sold := map[itemKey][]Sale{}              // the 200s, by item
	byShop := map[itemKey]map[string][]Sale{} // the shop's confirms, by item and buyer
	for _, s := range h.Sales {
		if r.Sales[s.Via] == nil {
			r.Sales[s.Via] = map[Outcome]int{}
		}
		r.Sales[s.Via][s.Outcome]++
		k := itemKey{s.Event, s.Item}
		if s.Forged() {
			if s.Sold() {
				r.ForgedSold = append(r.ForgedSold, fmt.Sprintf("%s/%s: a confirm by %s (%s) sent at %s was answered 200, sold to %s",
					s.Event, s.Item, s.User, s.Via, s.Sent.Format("15:04:05.000"), s.SoldTo))
			}
		} else {
			if byShop[k] == nil {
				byShop[k] = map[string][]Sale{}
			}
			byShop[k][s.User] = append(byShop[k][s.User], s)
		}
		if s.Sold() {
			sold[k] = append(sold[k], s)
		}
	}

	// Sold twice: each change of buyer between two 200s of one item, in the
	// order they were answered, must have a rebuild between them.
	rb := rebuilds(h)
	for _, k := range slices.SortedFunc(maps.Keys(sold), func(a, b itemKey) int {
		return strings.Compare(a.event+"/"+a.item, b.event+"/"+b.item)
	}) {
		ss := sold[k]
		slices.SortStableFunc(ss, func(a, b Sale) int { return a.Answered.Compare(b.Answered) })
		var changes []string
		excusedAll := true
		for i := 1; i < len(ss); i++ {
			x, y := ss[i-1], ss[i]
			if x.SoldTo == y.SoldTo {
				continue
			}
			rebuilt := slices.ContainsFunc(rb, func(w [2]time.Time) bool {
				return !w[0].Before(x.Sent) && !w[0].After(y.Answered)
			})
			excusedAll = excusedAll && rebuilt
			changes = append(changes, fmt.Sprintf("to %s at %s, then to %s at %s", x.SoldTo, x.Answered.Format("15:04:05.000"),
				y.SoldTo, y.Answered.Format("15:04:05.000")))
		}
		if len(changes) == 0 {
			continue
		}
		what := fmt.Sprintf("%s/%s: sold %s", k.event, k.item, strings.Join(changes, "; "))
		if excusedAll {
			r.SoldTwiceRebuilt = append(r.SoldTwiceRebuilt, what+" (a rebuild between)")
		} else {
			r.SoldTwice = append(r.SoldTwice, what)
		}
	}

	// Sold at the end: through the shop, to that buyer.
	for _, e := range cfg.Events {
		f := cfg.Final[e.ID]
		for _, item := range slices.Sorted(maps.Keys(f.Sold)) {
			buyer := f.Sold[item]
			r.ItemsSold++
			tries := byShop[itemKey{e.ID, item}][buyer]
			switch {
			case slices.ContainsFunc(tries, func(s Sale) bool { return s.Sold() && s.SoldTo == buyer }):
			case slices.ContainsFunc(tries, func(s Sale) bool { return !refused(s.Outcome) }):
				r.SoldUnanswered++
			default:
				r.SoldWithoutShop = append(r.SoldWithoutShop, fmt.Sprintf("%s/%s: sold to %s at the end, never confirmed by the shop for them (%d shop confirms for them, none answered 200)",
					e.ID, item, buyer, len(tries)))
			}
		}
	}
}

// refused reports whether an answer is a refusal for sure (a 4xx): the
// call changed nothing. A 5xx or no answer may have taken effect.
func refused(o Outcome) bool { return strings.HasPrefix(string(o), "4") }
