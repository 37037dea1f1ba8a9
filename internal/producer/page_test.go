package producer_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/producer"
	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
)

// TestEventPage: an event's page is set through the admin PUT, shown to
// anyone in the public event (without the admin-only fields), refused with
// invalid_config when a value is bad (nothing changes), and removed with
// null.
func TestEventPage(t *testing.T) {
	sys := testsys.Start(t, testsys.Options{})
	e := startAPI(t, sys, strict)
	ev := testenv.EventID(t)
	const page = `{"title":"아이유 콘서트 <script>alert(1)</script>","message":"잠시만 기다려 주세요.\n\n이 탭을 열어 두세요.","logoUrl":"https://cdn.example/logo.png","accentColor":"#C2185B","template":"{{title}}: {{position}} / {{total}}","locale":"ko"}`
	if r := e.putEvent(t, ev, `{"capacity":5,"page":`+page+`,"joinToken":{"keys":[{"kid":"k1","alg":"HS256","secret":"`+strings.Repeat("A", 43)+`"}]}}`); r.status != http.StatusCreated {
		t.Fatalf("create with a page: %d %s", r.status, r.body)
	}
	var want queue.Page
	if err := json.Unmarshal([]byte(page), &want); err != nil {
		t.Fatal(err)
	}
	public := func() producer.PublicEvent {
		t.Helper()
		r := e.do(t, http.MethodGet, "/v1/events/"+ev, nil, nil)
		var p producer.PublicEvent
		if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("public event: %d %s", r.status, r.body)
		}
		for _, secret := range []string{"reportToken", "shopToken", "joinToken", "secret", "capacity"} {
			if strings.Contains(string(r.body), `"`+secret+`"`) {
				t.Fatalf("the public event shows %s: %s", secret, r.body)
			}
		}
		return p
	}
	if p := public(); p.Page == nil || !reflect.DeepEqual(*p.Page, want) {
		t.Fatalf("public page %+v, want %+v", p.Page, want)
	}
	if st := e.status(t, ev); st.Page == nil || !reflect.DeepEqual(*st.Page, want) {
		t.Fatalf("admin page %+v", st.Page)
	}

	for _, body := range []string{
		`{"page":{"logoUrl":"javascript:alert(1)"}}`,
		`{"page":{"logoUrl":"http://cdn.example/logo.png"}}`,
		`{"page":{"logoUrl":"data:image/svg+xml,<svg/>"}}`,
		`{"page":{"accentColor":"red"}}`,
		`{"page":{"accentColor":"#1234567"}}`,
		`{"page":{"title":"` + strings.Repeat("x", queue.MaxPageTitle+1) + `"}}`,
		`{"page":{"message":"` + strings.Repeat("x", queue.MaxPageMessage+1) + `"}}`,
		`{"page":{"template":"` + strings.Repeat("x", queue.MaxPageTemplate+1) + `"}}`,
		`{"page":{"template":"{{position}} {{secret}}"}}`,
		`{"page":{"locale":"not a language"}}`,
		`{"page":{"title":"x","colour":"#000000"}}`,
		`{"page":"branded"}`,
	} {
		if r := e.putEvent(t, ev, body); r.status != http.StatusBadRequest || r.errorCode(t) != queue.CodeInvalidConfig {
			t.Errorf("%.80s: %d %s; want 400 invalid_config", body, r.status, r.body)
		}
	}
	if p := public(); p.Page == nil || !reflect.DeepEqual(*p.Page, want) {
		t.Fatalf("after refused changes the page is %+v", p.Page)
	}

	// The longest page fits the admin API's body limit, over the public
	// routes' 4 KiB.
	long := `{"page":{"title":"` + strings.Repeat("가", queue.MaxPageTitle) + `","message":"` + strings.Repeat("나", queue.MaxPageMessage) + `","template":"` + strings.Repeat("다", queue.MaxPageTemplate) + `"}}`
	if r := e.putEvent(t, ev, long); r.status != http.StatusOK {
		t.Fatalf("the longest page (%d bytes): %d %.200s", len(long), r.status, r.body)
	}

	// An object replaces the page whole; null removes it.
	if r := e.putEvent(t, ev, `{"page":{"title":"Spring sale"}}`); r.status != http.StatusOK {
		t.Fatalf("replace the page: %d %s", r.status, r.body)
	}
	if p := public(); p.Page == nil || *p.Page != (queue.Page{Title: "Spring sale"}) {
		t.Fatalf("replaced page %+v", p.Page)
	}
	if r := e.putEvent(t, ev, `{"page":null}`); r.status != http.StatusOK {
		t.Fatalf("remove the page: %d %s", r.status, r.body)
	}
	if p := public(); p.Page != nil {
		t.Fatalf("removed page %+v", p.Page)
	}
}
