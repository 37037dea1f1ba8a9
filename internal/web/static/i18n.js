// waitq's message catalogs and locale formatting for the waiting room page
// and the operators' console: English, Korean and Japanese. Every text the
// page shows or announces comes from the catalogs, one file per language
// (i18n-{en,ko,ja}.js), and the console's own strings from
// console-i18n-{en,ko,ja}.js, each added with i18n.extend. Strings hold
// {name} slots, filled as text (fill puts elements in them, never markup).
// A key with _one/_other variants is chosen by the plural rules of the
// language for vars.n.
"use strict";

const catalogs = {};

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
