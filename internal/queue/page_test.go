package queue_test

import (
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/queue"
)

func TestPageValidate(t *testing.T) {
	ok := []queue.Page{
		{},
		{Title: "아이유 콘서트 티켓팅", Message: "대기 중입니다.\n\n이 탭을 열어 두세요.", LogoURL: "https://cdn.example/logo.png", AccentColor: "#C2185B", Locale: "ko"},
		{Template: "{{title}}: {{ position }} / {{total}}, {{ahead}} ahead, {{eta}} (updated {{updated}})\n{{message}}", Locale: "en-US"},
		{Title: strings.Repeat("가", queue.MaxPageTitle)},
		{Message: "<script>alert(1)</script> is text, shown as such"},
	}
	for _, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	var none *queue.Page
	if err := none.Validate(); err != nil {
		t.Errorf("nil page: %v", err)
	}
	bad := []struct {
		p    queue.Page
		want string
	}{
		{queue.Page{LogoURL: "javascript:alert(1)"}, "page.logoUrl must be an absolute https URL"},
		{queue.Page{LogoURL: "data:image/png;base64,AAAA"}, "page.logoUrl"},
		{queue.Page{LogoURL: "http://cdn.example/logo.png"}, "page.logoUrl"},
		{queue.Page{LogoURL: "https://user:pw@cdn.example/logo.png"}, "page.logoUrl"},
		{queue.Page{LogoURL: "/logo.png"}, "page.logoUrl"},
		{queue.Page{LogoURL: "https://cdn.example/" + strings.Repeat("x", queue.MaxPageLogoURL)}, "at most 1024"},
		{queue.Page{AccentColor: "red"}, "page.accentColor"},
		{queue.Page{AccentColor: "#12345"}, "page.accentColor"},
		{queue.Page{AccentColor: "#12345g"}, "page.accentColor"},
		{queue.Page{AccentColor: "#123456;background:url(x)"}, "page.accentColor"},
		{queue.Page{Title: strings.Repeat("x", queue.MaxPageTitle+1)}, "page.title must be at most 120 characters"},
		{queue.Page{Title: "two\nlines"}, "page.title must not hold control characters"},
		{queue.Page{Message: strings.Repeat("x", queue.MaxPageMessage+1)}, "page.message must be at most"},
		{queue.Page{Message: "bell\a"}, "page.message must not hold control characters"},
		{queue.Page{Template: strings.Repeat("x", queue.MaxPageTemplate+1)}, "page.template must be at most"},
		{queue.Page{Template: "{{position}} of {{totl}}"}, "page.template uses {{totl}}"},
		{queue.Page{Template: "{{<img src=x>}}"}, "page.template uses"},
		{queue.Page{Locale: "korean language"}, "page.locale"},
		{queue.Page{Locale: strings.Repeat("a", 2) + strings.Repeat("-abcdefgh", 5)}, "page.locale"},
	}
	for _, c := range bad {
		err := c.p.Validate()
		if queue.ErrorCode(err) != queue.CodeInvalidConfig || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want invalid_config with %q", c.p, err, c.want)
		}
	}
	// The event's Validate checks its page.
	e := queue.Event{ID: "e", Capacity: 1, StaySeconds: 1, State: queue.StateOpen, Partitions: 1, Page: &queue.Page{AccentColor: "blue"}}
	if queue.ErrorCode(e.Validate()) != queue.CodeInvalidConfig {
		t.Errorf("an event with a bad page: %v", e.Validate())
	}
}
