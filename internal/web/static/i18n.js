// waitq's message catalogs and locale formatting for the waiting room page
// and the operators' console: English, Korean and Japanese. Every text the
// page shows or announces comes from here; the console's own strings are
// added by console-i18n-{en,ko,ja}.js (i18n.extend). Strings hold {name} slots, filled as text (fill puts
// elements in them, never markup). A key with _one/_other variants is
// chosen by the plural rules of the language for vars.n.
"use strict";

const catalogs = {
  en: {
    "lang.name": "English",
    "doc.title": "Waiting room",
    "lang.label": "Language",
    "lang.change": "Change",
    "join.title": "Joining the line…",
    "join.help": "Keep this tab open: you will be sent on by yourself when it is your turn. A refresh, a second tab or coming back later in this browser keeps your place.",
    "pow.text": "Checking that you are a person: this takes a moment.",
    "pow.step": "Checking that you are a person: {pct} done.",
    "pow.done": "Done: joining the line.",
    "join.retry": "Try again",
    "join.unreachable": "The waiting room cannot be reached. Please try again.",
    "join.failed": "Could not join ({status}).",
    "join.noAnswer": "no answer",
    "notOpen.text": "This drop does not take joins yet.",
    "notOpen.when": "The pre-queue opens at {at}, in {in}. This page joins by itself then.",
    "notOpen.drop": "The drop opens at {at}. Everyone who joins during the pre-queue gets a place drawn at random at the opening: there is no need to be first.",
    "notOpen.open": "The pre-queue is open: joining now.",
    "line.title": "You are in line for {event}",
    "conn.connecting": "Connecting…",
    "conn.reconnecting": "Reconnecting…",
    "conn.open": "Connected — updates every few seconds.",
    "conn.noWs": "No WebSocket here — trying server-sent events…",
    "conn.wsFailed": "The WebSocket could not open — trying server-sent events…",
    "conn.noSse": "No server-sent events in this browser — checking your place every few seconds.",
    "conn.sseConnecting": "Connecting (server-sent events)…",
    "conn.sseOpen": "Connected (server-sent events) — updates every few seconds.",
    "conn.lost": "Connection lost — reconnecting. You keep your place.",
    "conn.sseFailed": "Server-sent events could not open either — checking your place every few seconds.",
    "conn.polling": "No live connection — checking your place every few seconds.",
    "conn.busy": "The waiting room is busy — checking again shortly. You keep your place.",
    "conn.lostIn": "Connection lost — reconnecting in {time}. You keep your place.",
    "conn.tokenFetch": "It is your turn — connecting to fetch your entry token…",
    "state.waitingForPlace": "Waiting for your place…",
    "state.next": "You are next!",
    "state.inLine": "You are in line.",
    "state.pending": "Taking your place in line…",
    "state.rebuilding": "Your place is safe; the line is being restored. One moment…",
    "state.notQueued": "You are not in line any more.",
    "state.tokenBlocked": "It is your turn, but the entry token comes only over a live connection (WebSocket or server-sent events), which this network blocks. Your slot is held for you: try another network.",
    "state.prequeue": "You are in the pre-queue.",
    "state.opening": "Opening: the order is being drawn…",
    "phase.paused": "The sale is paused for a moment. You keep your place; the line moves again when it resumes.",
    "phase.closed": "This sale takes no new joins. Everyone already in line is still let in.",
    "drawn": "Your place was drawn: {place}",
    "place": "Position {position} of {total}",
    "ahead_one": "1 person ahead of you",
    "ahead_other": "{n} people ahead of you",
    "ahead.none": "Nobody is ahead of you",
    "eta": "Estimated wait: {eta}",
    "eta.unknown": "unknown",
    "eta.about": "about {time}",
    "eta.range": "{lo} to {hi}",
    "eta.stalled": "longer than first estimated: the line has not moved for {time}",
    "updated": "Last update: {time}",
    "next": "When it is your turn this page takes you on by itself. You may leave this tab in the background; keep it open.",
    "notify.button": "Notify me when it is my turn",
    "notify.on": "You will get a notification when it is your turn.",
    "notify.blocked": "Notifications are blocked in this browser: keep an eye on this tab.",
    "prequeue.opensIn": "The drop opens in {in}",
    "prequeue.at": "at {at}",
    "prequeue.moment": "a moment",
    "gathered_one": "1 person is here",
    "gathered_other": "{n} people are here",
    "progress.label": "Your way to the front",
    "draw.title": "A fair draw",
    "draw.explain": "At the opening, the order is drawn at random among everyone here: joining earlier in the pre-queue does not give a better place.",
    "draw.drawn_one": "The order was drawn at random among the 1 person in the pre-queue at the opening.",
    "draw.drawn_other": "The order was drawn at random among the {n} people in the pre-queue at the opening.",
    "draw.commitment": "Commitment (the SHA-256 of the secret seed, published before the opening):",
    "draw.seed": "Seed, revealed at the opening:",
    "draw.verify": "How to verify",
    "draw.hint": "After the opening the seed appears here. Its SHA-256 must be the commitment above ({cmd}), so the seed was fixed before anyone joined. The draw export and {verifier} then recompute the whole order from the seed and the ids of everyone in the pre-queue: each place follows from HMAC-SHA256(seed, user id).",
    "leave": "Leave the line",
    "admitted.title": "It is your turn",
    "admitted.expires": "Your slot expires in {countdown}.",
    "admitted.redirect": "Taking you to the shop… {link}",
    "admitted.continue": "Continue to the shop",
    "admitted.next": "You are admitted: go on to the shop now, until {until}. Your slot is held for you until then.",
    "admitted.developers": "For the shop's developers",
    "admitted.tokenLabel": "Entry token (a JWT the shop's server verifies)",
    "admitted.done": "Done — give my slot back",
    "released": "Thank you. Your slot went to the next person.",
    "left": "You left the line.",
    "notFound": "This event does not exist.",
    "a11y.position": "You are in line: position {position} of {total}.",
    "a11y.next": "You are next.",
    "a11y.admitted": "It is your turn. Your slot expires in {countdown}.",
    "a11y.redirect": "It is your turn: taking you to the shop.",
    "title.turn": "It is your turn — {title}",
    "title.position": "{position} · {title}",
    "notify.title": "It is your turn",
    "notify.body": "{title}: come back to this tab within {countdown}.",
    "dur.s": "{s} s",
    "dur.m": "{m} min {s} s",
    "dur.min": "{m} min",
    "dur.h": "{h} h {m} min",
    "dur.d": "{d} d {h} h",
  },
  ko: {
    "lang.name": "한국어",
    "doc.title": "대기실",
    "lang.label": "언어",
    "lang.change": "변경",
    "join.title": "대기열에 들어가는 중…",
    "join.help": "이 탭을 열어 두세요. 차례가 되면 자동으로 다음 페이지로 이동합니다. 새로 고침하거나 탭을 하나 더 열거나 이 브라우저로 나중에 다시 와도 순서는 그대로입니다.",
    "pow.text": "사람인지 확인하고 있습니다. 잠시만 기다려 주세요.",
    "pow.step": "사람인지 확인하는 중: {pct} 완료.",
    "pow.done": "확인 완료: 대기열에 들어갑니다.",
    "join.retry": "다시 시도",
    "join.unreachable": "대기실에 연결할 수 없습니다. 다시 시도해 주세요.",
    "join.failed": "대기열에 들어가지 못했습니다({status}).",
    "join.noAnswer": "응답 없음",
    "notOpen.text": "아직 대기열 참여를 받지 않습니다.",
    "notOpen.when": "사전 대기열은 {at}에 열립니다({in} 후). 그때 이 페이지가 자동으로 참여합니다.",
    "notOpen.drop": "판매는 {at}에 시작됩니다. 사전 대기열에 들어온 모든 분은 시작 시각에 무작위 추첨으로 순서를 받으므로 먼저 올 필요가 없습니다.",
    "notOpen.open": "사전 대기열이 열렸습니다. 지금 참여합니다.",
    "line.title": "{event} 대기 중",
    "conn.connecting": "연결 중…",
    "conn.reconnecting": "다시 연결 중…",
    "conn.open": "연결됨 — 몇 초마다 갱신됩니다.",
    "conn.noWs": "WebSocket을 쓸 수 없습니다 — 서버 전송 이벤트로 시도합니다…",
    "conn.wsFailed": "WebSocket을 열 수 없습니다 — 서버 전송 이벤트로 시도합니다…",
    "conn.noSse": "이 브라우저는 서버 전송 이벤트를 지원하지 않습니다 — 몇 초마다 순서를 확인합니다.",
    "conn.sseConnecting": "연결 중(서버 전송 이벤트)…",
    "conn.sseOpen": "연결됨(서버 전송 이벤트) — 몇 초마다 갱신됩니다.",
    "conn.lost": "연결이 끊겼습니다 — 다시 연결합니다. 순서는 유지됩니다.",
    "conn.sseFailed": "서버 전송 이벤트도 열 수 없습니다 — 몇 초마다 순서를 확인합니다.",
    "conn.polling": "실시간 연결 없음 — 몇 초마다 순서를 확인합니다.",
    "conn.busy": "대기실이 혼잡합니다 — 곧 다시 확인합니다. 순서는 유지됩니다.",
    "conn.lostIn": "연결이 끊겼습니다 — {time} 후 다시 연결합니다. 순서는 유지됩니다.",
    "conn.tokenFetch": "차례가 되었습니다 — 입장 토큰을 받으려고 연결하는 중…",
    "state.waitingForPlace": "순서를 기다리는 중…",
    "state.next": "다음 차례입니다!",
    "state.inLine": "대기열에 있습니다.",
    "state.pending": "대기열에 자리를 잡는 중…",
    "state.rebuilding": "순서는 안전합니다. 대기열을 복구하고 있으니 잠시만 기다려 주세요…",
    "state.notQueued": "더 이상 대기열에 있지 않습니다.",
    "state.tokenBlocked": "차례가 되었지만 입장 토큰은 실시간 연결(WebSocket 또는 서버 전송 이벤트)로만 전달되는데, 이 네트워크가 이를 막고 있습니다. 자리는 유지되니 다른 네트워크로 시도해 주세요.",
    "state.prequeue": "사전 대기열에 있습니다.",
    "state.opening": "시작: 순서를 추첨하는 중…",
    "phase.paused": "판매가 잠시 멈췄습니다. 순서는 유지되며 판매가 다시 시작되면 대기열도 다시 움직입니다.",
    "phase.closed": "이 판매는 새 참여를 받지 않습니다. 이미 대기열에 있는 분은 계속 입장합니다.",
    "drawn": "추첨된 순서: {place}",
    "place": "{total}명 중 {position}번째",
    "ahead_other": "앞에 {n}명이 있습니다",
    "ahead.none": "앞에 아무도 없습니다",
    "eta": "예상 대기 시간: {eta}",
    "eta.unknown": "알 수 없음",
    "eta.about": "약 {time}",
    "eta.range": "{lo}~{hi}",
    "eta.stalled": "처음 예상보다 길어지고 있습니다. 대기열이 {time} 동안 움직이지 않았습니다",
    "updated": "마지막 갱신: {time}",
    "next": "차례가 되면 이 페이지가 자동으로 이동합니다. 이 탭은 백그라운드에 두어도 되지만 닫지 마세요.",
    "notify.button": "차례가 되면 알림 받기",
    "notify.on": "차례가 되면 알림을 보내 드립니다.",
    "notify.blocked": "이 브라우저에서 알림이 차단되어 있습니다. 이 탭을 확인해 주세요.",
    "prequeue.opensIn": "{in} 후 판매 시작",
    "prequeue.at": "시작 시각 {at}",
    "prequeue.moment": "곧",
    "gathered_other": "{n}명이 모여 있습니다",
    "progress.label": "맨 앞까지의 진행 상황",
    "draw.title": "공정한 추첨",
    "draw.explain": "시작 시각에 여기 모인 모든 분 중에서 순서를 무작위로 추첨합니다. 사전 대기열에 먼저 들어와도 더 좋은 순서를 받지 않습니다.",
    "draw.drawn_other": "시작 시각에 사전 대기열에 있던 {n}명 중에서 순서를 무작위로 추첨했습니다.",
    "draw.commitment": "커밋(비밀 시드의 SHA-256, 시작 전에 공개):",
    "draw.seed": "시드(시작 시각에 공개):",
    "draw.verify": "검증 방법",
    "draw.hint": "시작 후 시드가 여기에 표시됩니다. 시드의 SHA-256은 위의 커밋과 같아야 하므로({cmd}) 누구도 참여하기 전에 시드가 정해졌음을 알 수 있습니다. 추첨 내보내기와 {verifier}로 시드와 사전 대기열 전원의 id에서 전체 순서를 다시 계산할 수 있습니다. 각 순서는 HMAC-SHA256(시드, 사용자 id)로 정해집니다.",
    "leave": "대기열에서 나가기",
    "admitted.title": "차례가 되었습니다",
    "admitted.expires": "입장 가능 시간이 {countdown} 남았습니다.",
    "admitted.redirect": "쇼핑몰로 이동하는 중… {link}",
    "admitted.continue": "쇼핑몰로 계속",
    "admitted.next": "입장이 허용되었습니다. 지금 쇼핑몰로 이동하세요. {until}까지 이용할 수 있으며 그때까지 자리가 유지됩니다.",
    "admitted.developers": "쇼핑몰 개발자용",
    "admitted.tokenLabel": "입장 토큰(쇼핑몰 서버가 검증하는 JWT)",
    "admitted.done": "완료 — 자리 반납하기",
    "released": "감사합니다. 자리가 다음 분께 넘어갔습니다.",
    "left": "대기열에서 나갔습니다.",
    "notFound": "존재하지 않는 이벤트입니다.",
    "a11y.position": "대기 중: {total}명 중 {position}번째입니다.",
    "a11y.next": "다음 차례입니다.",
    "a11y.admitted": "차례가 되었습니다. 입장 가능 시간이 {countdown} 남았습니다.",
    "a11y.redirect": "차례가 되었습니다. 쇼핑몰로 이동합니다.",
    "title.turn": "차례입니다 — {title}",
    "title.position": "{position}번째 · {title}",
    "notify.title": "차례가 되었습니다",
    "notify.body": "{title}: {countdown} 안에 이 탭으로 돌아와 주세요.",
    "dur.s": "{s}초",
    "dur.m": "{m}분 {s}초",
    "dur.min": "{m}분",
    "dur.h": "{h}시간 {m}분",
    "dur.d": "{d}일 {h}시간",
  },
  ja: {
    "lang.name": "日本語",
    "doc.title": "待合室",
    "lang.label": "言語",
    "lang.change": "変更",
    "join.title": "列に並んでいます…",
    "join.help": "このタブを開いたままにしてください。順番が来ると自動的に次のページへ進みます。再読み込みしても、別のタブを開いても、このブラウザーで後から戻っても順番は変わりません。",
    "pow.text": "人間であることを確認しています。少しお待ちください。",
    "pow.step": "人間であることを確認中: {pct} 完了。",
    "pow.done": "確認完了: 列に並びます。",
    "join.retry": "もう一度試す",
    "join.unreachable": "待合室に接続できません。もう一度お試しください。",
    "join.failed": "列に並べませんでした({status})。",
    "join.noAnswer": "応答なし",
    "notOpen.text": "このドロップはまだ受付を始めていません。",
    "notOpen.when": "事前待機列は {at} に開きます({in} 後)。そのときこのページが自動的に並びます。",
    "notOpen.drop": "ドロップは {at} に始まります。事前待機列に並んだ全員に、開始時刻に抽選で順番が割り当てられます。先に来る必要はありません。",
    "notOpen.open": "事前待機列が開きました。今から並びます。",
    "line.title": "{event} の列に並んでいます",
    "conn.connecting": "接続中…",
    "conn.reconnecting": "再接続中…",
    "conn.open": "接続済み — 数秒ごとに更新されます。",
    "conn.noWs": "WebSocket が使えません — Server-Sent Events を試しています…",
    "conn.wsFailed": "WebSocket を開けませんでした — Server-Sent Events を試しています…",
    "conn.noSse": "このブラウザーは Server-Sent Events に対応していません — 数秒ごとに順番を確認します。",
    "conn.sseConnecting": "接続中(Server-Sent Events)…",
    "conn.sseOpen": "接続済み(Server-Sent Events) — 数秒ごとに更新されます。",
    "conn.lost": "接続が切れました — 再接続しています。順番はそのままです。",
    "conn.sseFailed": "Server-Sent Events も開けませんでした — 数秒ごとに順番を確認します。",
    "conn.polling": "ライブ接続なし — 数秒ごとに順番を確認します。",
    "conn.busy": "待合室が混み合っています — まもなく再確認します。順番はそのままです。",
    "conn.lostIn": "接続が切れました — {time} 後に再接続します。順番はそのままです。",
    "conn.tokenFetch": "順番が来ました — 入場トークンを受け取るため接続しています…",
    "state.waitingForPlace": "順番を待っています…",
    "state.next": "次はあなたの番です!",
    "state.inLine": "列に並んでいます。",
    "state.pending": "列に場所を確保しています…",
    "state.rebuilding": "順番は保たれています。列を復元していますので少しお待ちください…",
    "state.notQueued": "列に並んでいません。",
    "state.tokenBlocked": "順番が来ましたが、入場トークンはライブ接続(WebSocket または Server-Sent Events)でのみ届きます。このネットワークはそれを遮断しています。枠は確保されていますので、別のネットワークでお試しください。",
    "state.prequeue": "事前待機列に並んでいます。",
    "state.opening": "開始: 順番を抽選しています…",
    "phase.paused": "販売は一時停止中です。順番はそのままで、再開すると列が再び進みます。",
    "phase.closed": "この販売は新しい受付を終了しました。すでに並んでいる方は引き続き入場できます。",
    "drawn": "抽選された順番: {place}",
    "place": "{total} 人中 {position} 番目",
    "ahead_other": "前に {n} 人います",
    "ahead.none": "前には誰もいません",
    "eta": "予想待ち時間: {eta}",
    "eta.unknown": "不明",
    "eta.about": "約 {time}",
    "eta.range": "{lo}〜{hi}",
    "eta.stalled": "最初の予想より長くなっています。列が {time} 動いていません",
    "updated": "最終更新: {time}",
    "next": "順番が来るとこのページが自動的に進みます。このタブはバックグラウンドにしても構いませんが、閉じないでください。",
    "notify.button": "順番が来たら通知する",
    "notify.on": "順番が来たら通知します。",
    "notify.blocked": "このブラウザーでは通知がブロックされています。このタブを確認してください。",
    "prequeue.opensIn": "ドロップ開始まで {in}",
    "prequeue.at": "開始時刻 {at}",
    "prequeue.moment": "まもなく",
    "gathered_other": "{n} 人が集まっています",
    "progress.label": "先頭までの進み具合",
    "draw.title": "公平な抽選",
    "draw.explain": "開始時刻に、ここにいる全員の中から順番を無作為に抽選します。事前待機列に早く並んでも順番が良くなることはありません。",
    "draw.drawn_other": "開始時刻に事前待機列にいた {n} 人の中から順番を無作為に抽選しました。",
    "draw.commitment": "コミットメント(秘密のシードの SHA-256、開始前に公開):",
    "draw.seed": "シード(開始時刻に公開):",
    "draw.verify": "検証の方法",
    "draw.hint": "開始後、シードがここに表示されます。その SHA-256 は上のコミットメントと一致しなければなりません({cmd})。つまり誰かが並ぶ前にシードは決まっていました。抽選のエクスポートと {verifier} で、シードと事前待機列の全員の ID から順番全体を再計算できます。各順番は HMAC-SHA256(シード, ユーザー ID) で決まります。",
    "leave": "列から抜ける",
    "admitted.title": "あなたの番です",
    "admitted.expires": "入場枠の残り時間: {countdown}。",
    "admitted.redirect": "ショップへ移動しています… {link}",
    "admitted.continue": "ショップへ進む",
    "admitted.next": "入場できます。今すぐショップへお進みください。{until} までご利用いただけ、それまで枠は確保されています。",
    "admitted.developers": "ショップの開発者向け",
    "admitted.tokenLabel": "入場トークン(ショップのサーバーが検証する JWT)",
    "admitted.done": "完了 — 枠を返す",
    "released": "ありがとうございました。枠は次の方に渡りました。",
    "left": "列から抜けました。",
    "notFound": "このイベントは存在しません。",
    "a11y.position": "列に並んでいます: {total} 人中 {position} 番目です。",
    "a11y.next": "次はあなたの番です。",
    "a11y.admitted": "あなたの番です。入場枠の残り時間は {countdown} です。",
    "a11y.redirect": "あなたの番です。ショップへ移動します。",
    "title.turn": "あなたの番です — {title}",
    "title.position": "{position} 番目 · {title}",
    "notify.title": "あなたの番です",
    "notify.body": "{title}: {countdown} 以内にこのタブへ戻ってください。",
    "dur.s": "{s} 秒",
    "dur.m": "{m} 分 {s} 秒",
    "dur.min": "{m} 分",
    "dur.h": "{h} 時間 {m} 分",
    "dur.d": "{d} 日 {h} 時間",
  },
};

// i18n is the page's language and what speaks it; choose sets it.
const i18n = {
  lang: "en",
  languages: Object.keys(catalogs),

  // choose sets the language: the first of tags (in order of preference:
  // ?lang=, the browser's languages, the event's locale) whose language
  // has a catalog, else English. It returns the language.
  choose(tags) {
    this.lang = "en";
    for (const tag of tags) {
      const base = String(tag || "").toLowerCase().split("-")[0];
      if (catalogs[base]) {
        this.lang = base;
        break;
      }
    }
    document.documentElement.lang = this.lang;
    return this.lang;
  },

  // t returns key's text in the language with vars in its {slots}; a key
  // the language lacks falls back to English.
  t(key, vars = {}) {
    const cat = catalogs[this.lang];
    let k = key;
    if (vars.n !== undefined) {
      const form = `${key}_${new Intl.PluralRules(this.lang).select(Number(vars.n))}`;
      k = cat[form] !== undefined || catalogs.en[form] !== undefined ? form : `${key}_other`;
    }
    const text = cat[k] ?? catalogs.en[k] ?? key;
    return text.replace(/\{(\w+)\}/g, (m, name) => {
      const v = vars[name];
      if (v === undefined) return m;
      return typeof v === "number" ? this.num(v) : String(v);
    });
  },

  // num formats n in the language; with digits, with that many decimals.
  num(n, digits) { return new Intl.NumberFormat(this.lang, digits === undefined ? {} : { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(n); },

  pct(p) { return new Intl.NumberFormat(this.lang, { style: "percent" }).format(p / 100); },

  // time shows unix ms t as a time of day in the language, with the date
  // when it is not today.
  time(t) {
    const d = new Date(t);
    return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString(this.lang) : d.toLocaleString(this.lang);
  },

  // duration says s seconds: "42 s", "3 min 5 s", "2 h 10 min", "1 d 3 h".
  duration(s) {
    s = Math.max(0, Math.round(s));
    if (s >= 86400) return this.t("dur.d", { d: Math.floor(s / 86400), h: Math.floor(s % 86400 / 3600) });
    if (s >= 3600) return this.t("dur.h", { h: Math.floor(s / 3600), m: Math.floor(s % 3600 / 60) });
    return s >= 60 ? this.t("dur.m", { m: Math.floor(s / 60), s: s % 60 }) : this.t("dur.s", { s });
  },

  // apply sets the text of every element with data-i18n in root to its
  // key's text, and each attribute data-i18n-attr names ("attr=key; …").
  apply(root = document) {
    for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = this.t(el.dataset.i18n);
    for (const el of root.querySelectorAll("[data-i18n-attr]")) {
      for (const pair of el.dataset.i18nAttr.split(";")) {
        const [attr, key] = pair.split("=").map((x) => x.trim());
        if (attr && key) el.setAttribute(attr, this.t(key));
      }
    }
  },

  // extend adds catalog entries by language ({en: {…}, ko: {…}}): another
  // page's own strings (the console's, console-i18n-*.js) on this one
  // mechanism.
  extend(more) {
    for (const [lang, entries] of Object.entries(more)) catalogs[lang] = Object.assign(catalogs[lang] || {}, entries);
    this.languages = Object.keys(catalogs);
  },
};

// fill replaces el's content with text whose slots (matched by slot, whose
// first group is the name; {name} by default) are filled from nodes: a
// Node (moved there), a function returning one (a fresh one per slot), or
// a string; a slot nodes lacks stays as written. Everything else is a text
// node: nothing in text is read as markup.
function fill(el, text, nodes = {}, slot = /\{(\w+)\}/g) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(slot)) {
    out.push(text.slice(last, m.index));
    const v = nodes[m[1]];
    out.push(v === undefined ? m[0] : typeof v === "function" ? v() : v);
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  el.replaceChildren(...out.filter((p) => p !== ""));
}
