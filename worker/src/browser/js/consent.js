// Finds a cookie/consent banner and its reject control: the known consent platforms first, then any
// visible dialog-like element that talks about cookies, with its buttons matched by their text in
// English, German, French, Spanish, Italian and Dutch. Returns {banner, reject, selector}; with
// `click` true it also clicks the reject control (the only click the browser check ever makes).
(click) => {
  const platforms = [
    // [banner, reject control]
    ['#onetrust-banner-sdk, #onetrust-consent-sdk', '#onetrust-reject-all-handler, .ot-pc-refuse-all-handler'],
    ['#CybotCookiebotDialog', '#CybotCookiebotDialogBodyButtonDecline, #CybotCookiebotDialogBodyLevelButtonLevelOptinDeclineAll'],
    ['#didomi-notice, #didomi-popup', '#didomi-notice-disagree-button, .didomi-continue-without-agreeing'],
    ['#usercentrics-root, #usercentrics-cmp-ui, #uc-banner', '[data-testid="uc-deny-all-button"], #deny'],
    ['.qc-cmp2-container, #qc-cmp2-ui', '.qc-cmp2-summary-buttons button[mode="secondary"], button[aria-label="DISAGREE"]'],
    ['#truste-consent-track, .truste_box_overlay, #consent_blackbar', '#truste-consent-required, .truste-consent-required'],
    ['.cky-consent-container, #cookie-law-info-bar', '.cky-btn-reject, #cookie_action_close_header_reject'],
    ['.klaro .cookie-notice, .klaro .cookie-modal', '.klaro .cn-decline, .klaro .cm-btn-decline'],
    ['.cmplz-cookiebanner, #cmplz-cookiebanner-container', '.cmplz-btn.cmplz-deny'],
    ['#BorlabsCookieBox, #BorlabsCookieWidget, .brlbs-cmpnt-dialog', '#BorlabsCookieBox a[data-cookie-refuse], .brlbs-btn-accept-only-essential, [data-borlabs-cookie-actions="reject"]'],
    ['#cmpbox, .cmpbox', '.cmpboxbtnno, .cmpboxbtn.cmpboxbtnno'],
    ['#iubenda-cs-banner', '.iubenda-cs-reject-btn'],
    ['#cookiescript_injected', '#cookiescript_reject'],
    ['.osano-cm-window', '.osano-cm-denyAll, .osano-cm-deny'],
    ['#termly-code-snippet-support, [class*="termly-styles"]', '[data-tid="banner-decline"]'],
    ['.cc-window, .cc-banner', '.cc-deny, .cc-dismiss[aria-label*="deny" i]'],
    ['#CookieConsent, .cookieconsent', '[data-cc="reject-all"], .cc-btn.cc-deny'],
  ];
  const phrases = [
    // English
    'reject all', 'reject all cookies', 'reject', 'decline', 'decline all', 'deny', 'deny all', 'refuse', 'refuse all',
    'only necessary', 'only essential', 'necessary only', 'essential only', 'use necessary cookies only',
    'necessary cookies only', 'reject optional cookies', 'reject non-essential', 'continue without accepting',
    "i don't accept", 'do not accept', 'disagree',
    // German
    'alle ablehnen', 'ablehnen', 'nur notwendige', 'nur essenzielle', 'nur erforderliche', 'nur notwendige cookies',
    'nur essenzielle cookies akzeptieren', 'nur notwendige cookies akzeptieren', 'nicht einverstanden', 'verweigern',
    'alle verweigern', 'weiter ohne einwilligung', 'optionale cookies ablehnen',
    // French
    'tout refuser', 'refuser', 'refuser tout', 'je refuse', 'continuer sans accepter', 'refuser les cookies',
    'uniquement les cookies nécessaires', 'rejeter', 'tout rejeter',
    // Spanish
    'rechazar todo', 'rechazar todas', 'rechazar', 'rechazar cookies', 'solo necesarias', 'denegar', 'no acepto',
    // Italian
    'rifiuta tutto', 'rifiuta', 'rifiuta tutti', 'solo necessari', 'continua senza accettare', 'nega', 'non accetto',
    // Dutch
    'alles weigeren', 'weigeren', 'alle weigeren', 'afwijzen', 'alles afwijzen', 'alleen noodzakelijke',
    'alleen noodzakelijke cookies', 'niet akkoord',
  ];
  const words = /cookie|consent|gdpr|dsgvo|privacy|datenschutz|rgpd|einwilligung|zustimm|toestemming|consentement|consenso|consentimiento/i;

  const visible = (el) => {
    if (!el || el.nodeType !== 1) return false;
    const c = getComputedStyle(el);
    if (c.display === 'none' || c.visibility === 'hidden' || parseFloat(c.opacity) === 0) return false;
    return el.getClientRects().length > 0;
  };
  // Every element under `root`, through open shadow roots, bounded.
  const all = (root, sel) => {
    const out = [];
    const stack = [root];
    let seen = 0;
    while (stack.length && seen < 20000) {
      const r = stack.pop();
      for (const el of r.querySelectorAll(sel)) out.push(el);
      for (const el of r.querySelectorAll('*')) {
        seen++;
        if (el.shadowRoot) stack.push(el.shadowRoot);
        if (seen >= 20000) break;
      }
    }
    return out;
  };
  const norm = (t) => (t || '').replace(/\s+/g, ' ').trim().toLowerCase().replace(/[.!]+$/, '');
  const label = (el) => norm(el.innerText || el.textContent || el.value || el.getAttribute('aria-label') || '');
  const describe = (el) => (window.__shoal ? window.__shoal.selector(el) : el.tagName.toLowerCase());

  let banner = null;
  let reject = null;
  for (const [b, r] of platforms) {
    const found = all(document, b).find(visible);
    if (!found) continue;
    banner = found;
    reject = all(document, r).find(visible) || null;
    break;
  }
  if (!banner) {
    // A visible fixed/sticky or dialog element whose text speaks of cookies or consent.
    const candidates = all(document, '[role="dialog"], [aria-modal="true"], dialog, [id*="cookie" i], [class*="cookie" i], [id*="consent" i], [class*="consent" i], [id*="gdpr" i], [class*="banner" i], div, section, aside, footer');
    for (const el of candidates.slice(0, 5000)) {
      if (!visible(el)) continue;
      const pos = getComputedStyle(el).position;
      const dialogish = pos === 'fixed' || pos === 'sticky' || el.matches('[role="dialog"], [aria-modal="true"], dialog');
      if (!dialogish) continue;
      const text = (el.innerText || '').slice(0, 3000);
      if (!words.test(text) && !words.test(el.id + ' ' + el.className)) continue;
      if (!el.querySelector('button, a, [role="button"], input[type="button"], input[type="submit"]')) continue;
      banner = el;
      break;
    }
  }
  if (banner && !reject) {
    const controls = all(banner.shadowRoot || banner, 'button, a, [role="button"], input[type="button"], input[type="submit"]').filter(visible);
    for (const p of phrases) {
      reject = controls.find((el) => label(el) === p) || null;
      if (reject) break;
    }
    if (!reject) {
      reject = controls.find((el) => phrases.some((p) => p.length > 5 && label(el).startsWith(p))) || null;
    }
  }
  const result = {
    banner: !!banner,
    reject: reject ? (label(reject) || describe(reject)) : null,
    selector: reject ? describe(reject) : null,
    clicked: false,
  };
  if (click && reject) {
    reject.click();
    result.clicked = true;
  }
  return result;
}
