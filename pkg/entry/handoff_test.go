package entry

import "testing"

func TestAdmittedURL(t *testing.T) {
	const target = "https://shop.example/sale?from=waitq"
	for _, tc := range []struct{ name, returnTo, want string }{
		{"no returnTo: the target", "", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"a page of the shop", "https://shop.example/product/7?size=m#top", "https://shop.example/product/7?size=m&waitq_token=T#top"},
		{"host case does not matter", "https://SHOP.example/cart", "https://SHOP.example/cart?waitq_token=T"},
		{"a path of the shop", "/product/7", "https://shop.example/product/7?waitq_token=T"},
		{"a token already there is replaced", "https://shop.example/x?waitq_token=old&a=1", "https://shop.example/x?a=1&waitq_token=T"},
		{"another host", "https://evil.example/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"a suffix host", "https://shop.example.evil.example/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"another port", "https://shop.example:8443/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"another scheme", "http://shop.example/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"scheme-relative", "//evil.example/x", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"javascript", "javascript:alert(1)", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"userinfo", "https://shop.example@evil.example/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"encoded userinfo", "https://shop.example%2F@evil.example/", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"backslash", "https:/\\evil.example", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"backslash path", "/\\evil.example", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"a shop path a redirect would take off-site", "https://shop.example//evil.example/phish", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"the same, encoded", "https://shop.example/%2F%2Fevil.example/phish", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"the same as a path", "/%2F/evil.example/phish", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"control character", "https://shop.example/\tx", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"a relative path", "product/7", "https://shop.example/sale?from=waitq&waitq_token=T"},
		{"data", "data:text/html,<script>x</script>", "https://shop.example/sale?from=waitq&waitq_token=T"},
	} {
		if got := AdmittedURL(target, tc.returnTo, "T"); got != tc.want {
			t.Errorf("%s: AdmittedURL(%q) = %q, want %q", tc.name, tc.returnTo, got, tc.want)
		}
	}
	if got := AdmittedURL("", "https://shop.example/", "T"); got != "" {
		t.Errorf("no target: %q", got)
	}
	if got := AdmittedURL("https://shop.example", "", "a+b/c="); got != "https://shop.example?waitq_token=a%2Bb%2Fc%3D" {
		t.Errorf("the token is escaped: %q", got)
	}
}

func TestTakeParam(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "",
		"waitq_token=x":                   "",
		"a=1&waitq_token=x&b=2":           "a=1&b=2",
		"a=1&waitq%5Ftoken=x&b=2":         "a=1&b=2",
		"b=2&a=1":                         "b=2&a=1",
		"waitq_token_other=1&waitq_token": "waitq_token_other=1",
	} {
		if _, got, _ := takeParam(in, TokenParam); got != want {
			t.Errorf("takeParam(%q) rest = %q, want %q", in, got, want)
		}
	}
}
