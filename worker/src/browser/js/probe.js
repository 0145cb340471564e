// Shoal's browser probe: injected before any script of the page (Page.addScriptToEvaluateOnNewDocument)
// in every frame. It observes the Core Web Vitals as the web-vitals library defines them, keeps forms
// from being submitted and windows from being opened, and offers the helpers the engine calls
// (`window.__shoal`). It reads the page; it never changes what the page shows.
(() => {
  if (window.__shoal) return;
  const s = {
    lcp: null,
    fcp: null,
    // CLS: the largest session window of layout shifts without recent input (gap < 1 s, window < 5 s).
    cls: 0,
    win: { value: 0, first: 0, last: 0 },
    longTasks: [],
    inp: null,
  };
  const observe = (type, cb, opts) => {
    try {
      new PerformanceObserver((list) => list.getEntries().forEach(cb)).observe(Object.assign({ type, buffered: true }, opts || {}));
    } catch (_) { /* type not supported */ }
  };
  observe('largest-contentful-paint', (e) => { s.lcp = e.startTime; });
  observe('paint', (e) => { if (e.name === 'first-contentful-paint') s.fcp = e.startTime; });
  observe('layout-shift', (e) => {
    if (e.hadRecentInput) return;
    const w = s.win;
    if (w.value > 0 && e.startTime - w.last < 1000 && e.startTime - w.first < 5000) {
      w.value += e.value;
      w.last = e.startTime;
    } else {
      s.win = { value: e.value, first: e.startTime, last: e.startTime };
    }
    s.cls = Math.max(s.cls, s.win.value);
  });
  observe('longtask', (e) => { s.longTasks.push([e.startTime, e.duration]); });
  observe('event', (e) => {
    if (e.interactionId) s.inp = Math.max(s.inp || 0, e.duration);
  }, { durationThreshold: 16 });

  // No form is ever submitted and no window opened by the check.
  document.addEventListener('submit', (e) => { e.preventDefault(); e.stopImmediatePropagation(); }, true);
  // A link (or a script clicking one, or a key handler) that opens another window or tab does
  // nothing: the check looks at this tab only. `<base target>` counts for links without their own.
  const opensWindow = (el) => {
    const t = ((el.getAttribute && el.getAttribute('target')) ||
      (document.querySelector('base[target]') || { target: '' }).target || '').trim().toLowerCase();
    return t !== '' && t !== '_self' && t !== '_top' && t !== '_parent';
  };
  document.addEventListener('click', (e) => {
    const path = e.composedPath ? e.composedPath() : [e.target];
    const link = path.find((n) => n && n.nodeType === 1 && (n.tagName === 'A' || n.tagName === 'AREA') && n.hasAttribute('href'));
    if (link && (opensWindow(link) || e.ctrlKey || e.metaKey || e.shiftKey || e.button === 1)) e.preventDefault();
  }, true);
  try {
    // Detached links clicked by a script never reach the document's listener.
    const click = HTMLElement.prototype.click;
    HTMLElement.prototype.click = function () {
      if ((this.tagName === 'A' || this.tagName === 'AREA') && !this.isConnected && opensWindow(this)) return;
      return click.call(this);
    };
  } catch (_) { /* frozen */ }
  try {
    HTMLFormElement.prototype.submit = function () {};
    HTMLFormElement.prototype.requestSubmit = function () {};
    window.open = function () { return null; };
  } catch (_) { /* frozen */ }
  // Connections the page's request interception cannot see (WebSockets, WebTransport, WebRTC,
  // and whatever a worker or service worker would fetch) are not opened at all. (They could only
  // reach what the worker's proxy allows anyway; this keeps the record of the tab complete.)
  for (const name of ['WebSocket', 'WebTransport', 'Worker', 'SharedWorker', 'RTCPeerConnection', 'webkitRTCPeerConnection']) {
    try {
      Object.defineProperty(window, name, {
        value: function () { throw new DOMException('blocked by the audit', 'SecurityError'); },
        configurable: false, writable: false,
      });
    } catch (_) { /* already defined read-only */ }
  }
  try {
    if (navigator.serviceWorker) {
      Object.defineProperty(navigator.serviceWorker, 'register', {
        value: () => Promise.reject(new DOMException('blocked by the audit', 'SecurityError')),
        configurable: false, writable: false,
      });
    }
  } catch (_) { /* frozen */ }

  // A short, stable CSS selector for an element (id, else tag.class path under the nearest id).
  const selector = (el) => {
    if (!el || el.nodeType !== 1) return '';
    const parts = [];
    for (let n = el, depth = 0; n && n.nodeType === 1 && depth < 6; n = n.parentElement, depth++) {
      if (n.id && /^[A-Za-z][\w-]*$/.test(n.id)) { parts.unshift('#' + n.id); break; }
      let part = n.tagName.toLowerCase();
      const cls = Array.from(n.classList).filter((c) => /^[A-Za-z][\w-]*$/.test(c)).slice(0, 2);
      if (cls.length) part += '.' + cls.join('.');
      const parent = n.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === n.tagName);
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(n) + 1) + ')';
      }
      parts.unshift(part);
    }
    return parts.join(' > ');
  };

  s.vitals = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = s.fcp;
    let tbt = null;
    if (fcp !== null) {
      tbt = 0;
      for (const [start, duration] of s.longTasks) {
        if (start + duration > fcp) tbt += Math.max(0, duration - 50);
      }
    }
    return {
      lcp: s.lcp,
      cls: s.cls,
      inp: s.inp,
      tbt,
      fcp,
      ttfb: nav ? nav.responseStart : null,
      status: nav && nav.responseStatus ? nav.responseStatus : null,
      url: location.href,
    };
  };

  // Keyboard: what has focus now, and whether it shows a focus indicator. The indicator is compared
  // with the same element's look without focus (blurred, then focused again as a keyboard would).
  const look = (el) => {
    const c = getComputedStyle(el);
    return [c.outlineStyle, c.outlineWidth, c.outlineColor, c.boxShadow, c.borderColor, c.backgroundColor, c.color, c.textDecorationLine].join('|');
  };
  // `back` is true when focus moved to an element that comes before the previous one in the
  // document (not after leaving the page: a wrap to the start is not a step back).
  let prev = null;
  s.focusStep = () => {
    const el = document.activeElement;
    if (!el || el === document.body || el === document.documentElement) { prev = null; return { sel: null }; }
    const focused = look(el);
    const c = getComputedStyle(el);
    const outlined = c.outlineStyle !== 'none' && parseFloat(c.outlineWidth) > 0;
    el.blur();
    const plain = look(el);
    try { el.focus({ focusVisible: true, preventScroll: true }); } catch (_) { el.focus(); }
    const back = !!(prev && prev !== el && (el.compareDocumentPosition(prev) & Node.DOCUMENT_POSITION_FOLLOWING));
    const from = prev ? selector(prev) : '';
    prev = el;
    return {
      sel: selector(el),
      visible: outlined || focused !== plain,
      back,
      from,
      href: el.tagName === 'A' ? (el.getAttribute('href') || '') : '',
      text: (el.textContent || '').trim().slice(0, 80),
    };
  };
  // How many elements a keyboard user should be able to reach.
  s.tabbable = () => Array.from(document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex], [contenteditable="true"]'))
    .filter((el) => !el.disabled && el.tabIndex >= 0 && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden').length;
  // Whether an in-page link (href="#x") points at something that exists (a skip link's target).
  s.skipTarget = (href) => {
    if (!href || href[0] !== '#' || href.length < 2) return false;
    const id = decodeURIComponent(href.slice(1));
    return !!(document.getElementById(id) || document.getElementsByName(id)[0]);
  };
  s.selector = selector;
  // Uncaught script errors and unhandled promise rejections (not failed image or script loads,
  // whose 'error' events are plain Events on the element): at most 20, 300 characters each.
  const errors = [];
  const note = (text) => { if (errors.length < 20) errors.push(String(text).slice(0, 300)); };
  window.addEventListener('error', (e) => {
    if (!(e instanceof ErrorEvent)) return;
    const where = e.filename ? ` (${e.filename}:${e.lineno})` : '';
    note(`${e.message || 'error'}${where}`);
  });
  window.addEventListener('unhandledrejection', (e) => {
    const r = e.reason;
    note(`unhandled promise rejection: ${r && r.message ? r.message : String(r)}`);
  });
  s.errors = () => errors.slice();
  Object.defineProperty(window, '__shoal', { value: s, enumerable: false });
})();
