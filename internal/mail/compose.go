package mail

import (
	"fmt"
	"strings"
	"time"
)

// Turn is what a mail of being called says.
type Turn struct {
	// Locale is the event page's locale (page.locale): ko and ja have
	// texts of their own, anything else gets English.
	Locale string
	// Title is the event's title (the page's, else its id).
	Title string
	// Link is the resume link.
	Link string
	// Early: the early mail (Ahead people ahead), else the call.
	Early bool
	Ahead int64
	// Until is when the link ends: the claim window's end for a call.
	Until time.Time
}

// texts are a language's subject and body formats: the call's, then the
// early mail's. The body's verbs are the title, the time the link ends,
// the link (and for the early mail first the people ahead).
type texts struct {
	callSubject, callBody, earlySubject, earlyBody string
}

var catalog = map[string]texts{
	"en": {
		callSubject: "Your turn for %s",
		callBody: "Your turn for %s has come.\n\nIt waits for you until %s. Open this link to go in:\n\n%s\n\n" +
			"The link is yours alone and works once.\n\n",
		earlySubject: "Almost your turn for %s",
		earlyBody: "%d people are ahead of you for %s.\n\nKeep the waiting room open, or come back to it with this link " +
			"(until %s):\n\n%s\n\nWe mail you again when it is your turn.\n\n",
	},
	"ko": {
		callSubject: "%s: 차례가 되었습니다",
		callBody: "%s 입장 차례가 되었습니다.\n\n%s까지 기다립니다. 이 링크를 열어 입장하세요:\n\n%s\n\n" +
			"링크는 본인만 한 번 사용할 수 있습니다.\n\n",
		earlySubject: "%s: 곧 차례입니다",
		earlyBody: "앞에 %d명이 있습니다 (%s).\n\n대기실을 열어 두거나 이 링크로 돌아오세요 (%s까지):\n\n%s\n\n" +
			"차례가 되면 다시 메일을 보냅니다.\n\n",
	},
	"ja": {
		callSubject: "%s：順番が来ました",
		callBody: "%sの順番が来ました。\n\n%sまでお待ちします。このリンクを開いて入場してください：\n\n%s\n\n" +
			"リンクはご本人のみ、一度だけ使えます。\n\n",
		earlySubject: "%s：まもなく順番です",
		earlyBody: "前にあと%d人です（%s）。\n\n待合室を開いたままにするか、このリンクで戻ってください（%sまで）：\n\n%s\n\n" +
			"順番が来たらもう一度メールします。\n\n",
	},
}

// footers say why the mail came, and that the address is not kept.
var footers = map[string]string{
	"en": "You get this mail because you asked the waiting room to tell you when it is your turn. Your address is deleted once it is no longer needed.\n",
	"ko": "대기실에서 차례 알림을 요청하셨기 때문에 이 메일을 받으셨습니다. 주소는 더 이상 필요하지 않으면 삭제됩니다.\n",
	"ja": "待合室で順番のお知らせを希望されたため、このメールをお送りしています。アドレスは不要になった時点で削除されます。\n",
}

// language is the catalog's language of locale (a BCP 47 tag).
func language(locale string) string {
	l := strings.ToLower(locale)
	for _, lang := range []string{"ko", "ja"} {
		if l == lang || strings.HasPrefix(l, lang+"-") {
			return lang
		}
	}
	return "en"
}

// Compose returns the mail of t to the address to. The title is put on one
// line (a line break in a subject would be a header injected).
func Compose(to string, t Turn) Message {
	lang := language(t.Locale)
	tx := catalog[lang]
	title := strings.Join(strings.Fields(t.Title), " ")
	until := t.Until.UTC().Format("2006-01-02 15:04 UTC")
	m := Message{To: to}
	if t.Early {
		m.Subject = fmt.Sprintf(tx.earlySubject, title)
		m.Body = fmt.Sprintf(tx.earlyBody, t.Ahead, title, until, t.Link)
	} else {
		m.Subject = fmt.Sprintf(tx.callSubject, title)
		m.Body = fmt.Sprintf(tx.callBody, title, until, t.Link)
	}
	m.Body += footers[lang]
	return m
}
