package entry

// One reading of a path for every rule that must hold whatever the origin
// makes of it: the done path here, waitq-guard's protected paths.

import (
	"net/url"
	"strings"
)

// maxUnescapes bounds PathKey's repeated percent-decoding.
const maxUnescapes = 3

// PathKey returns the one form of the URL path p (decoded once, as
// url.URL.Path holds it) under which every path some common origin may
// serve as the same resource is the same: percent escapes decoded again
// (a second decoding turns "/%256Frder" into "/order"), backslashes read
// as slashes (IIS), letter case folded, each segment's ";" parameters
// dropped (servlet containers: "/order;jsessionid=1", "/x/..;/order") with
// its trailing dots and spaces (Windows), "." and ".." resolved, and
// empty segments and a trailing slash dropped. "/ORDER/", "//order",
// "/cart/../order" and "/order;x=1" all have the key "/order"; "/" is its
// own key.
func PathKey(p string) string {
	for range maxUnescapes {
		u, err := url.PathUnescape(p)
		if err != nil || u == p {
			break
		}
		p = u
	}
	p = strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			continue
		}
		if seg = strings.TrimRight(seg, ". "); seg != "" {
			segs = append(segs, seg)
		}
	}
	return "/" + strings.Join(segs, "/")
}
