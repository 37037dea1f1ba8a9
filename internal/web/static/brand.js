// The event's branding on the waiting room page: its page object from the
// public event (title, message, logo, accent colour, template). Operator
// text is only ever put in text nodes (fill, textContent): markup in it is
// shown as written. A template fills the message area only, with spans for
// its placeholders that update sets on every status: the page's own
// position, progress and live region are outside it, so a template cannot
// break them.
"use strict";

const brand = {
  page: {},
  // values are the placeholders' current texts (queue.PagePlaceholders).
  values: { title: "", message: "", position: "–", total: "–", ahead: "–", eta: "–", updated: "–" },

  // title is the event's name for people: the page's title, else its id.
  title(eventId) { return this.page.title || eventId; },

  // tabTitle is the document's title: the page's title, else "Waiting
  // room" in the page's language.
  tabTitle() { return this.page.title || i18n.t("doc.title"); },

  // show puts page (the public event's page, or none) on the document.
  show(page, eventId) {
    this.page = page || {};
    const p = this.page;
    this.values.title = this.title(eventId);
    this.values.message = p.message || "";
    $("title").textContent = this.tabTitle();
    const logo = $("logo");
    if (p.logoUrl && /^https:\/\//.test(p.logoUrl)) {
      logo.src = p.logoUrl;
      logo.hidden = false;
    } else {
      logo.hidden = true;
      logo.removeAttribute("src");
    }
    if (p.accentColor && /^#[0-9a-fA-F]{6}$/.test(p.accentColor)) {
      document.documentElement.style.setProperty("--accent", p.accentColor);
      document.documentElement.style.setProperty("--on-accent", onColour(p.accentColor));
      document.documentElement.dataset.branded = "true";
    }
    this.render();
  },

  // render fills the message area: the template with its placeholders, or
  // the message, a paragraph per blank-line-separated block.
  render() {
    const area = $("brand-message");
    const text = this.page.template || this.page.message || "";
    const paragraphs = text.split(/\r?\n\s*\r?\n/).filter((b) => b.trim() !== "");
    const slots = {};
    for (const name of Object.keys(this.values)) {
      slots[name] = () => {
        const s = document.createElement("span");
        s.dataset.ph = name;
        s.textContent = this.values[name];
        return s;
      };
    }
    area.replaceChildren(...paragraphs.map((b) => {
      const el = document.createElement("p");
      if (this.page.template) fill(el, b, slots, /\{\{\s*(\w+)\s*\}\}/g);
      else el.textContent = b;
      return el;
    }));
    area.hidden = paragraphs.length === 0;
  },

  // update sets the placeholders in vals, wherever the template has them.
  update(vals) {
    for (const [name, v] of Object.entries(vals)) {
      if (this.values[name] === v) continue;
      this.values[name] = v;
      for (const s of $("brand-message").querySelectorAll(`[data-ph="${name}"]`)) s.textContent = v;
    }
  },
};

// onColour returns black or white, whichever contrasts more with the
// colour hex (#rrggbb), by WCAG's relative luminance.
function onColour(hex) {
  const lin = (i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
}
