//! Google's `robots_test.cc` (Apache-2.0, google/robotstxt) and RFC 9309's examples, ported as
//! tables and run through `shoal_shared::robots`.
//!
//! Where Google's library and RFC 9309 disagree, the RFC wins and the row says so in a comment.
//! Google-only behaviours that a crawler should not copy are left out with a note.

use shoal_shared::robots::{ProductToken, RobotsRules, Verdict};

/// One robots.txt body and the verdicts expected for it: `(agent, url, allowed)`.
struct Table {
    name: &'static str,
    robots: &'static str,
    expect: &'static [(&'static str, &'static str, bool)],
}

fn run(tables: &[Table]) {
    let mut failures = Vec::new();
    for table in tables {
        for &(agent, url, allowed) in table.expect {
            let rules = RobotsRules::parse(table.robots.as_bytes(), &ProductToken::from_agent(agent));
            let verdict = rules.check_str(url);
            if verdict.is_allowed() != allowed {
                failures.push(format!(
                    "{}: agent {agent:?} url {url:?}: expected allowed={allowed}, got {verdict:?}",
                    table.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

const FOO: &str = "FooBot";

#[test]
fn google_line_syntax() {
    run(&[
        Table {
            name: "ID_LineSyntax_Line (correct)",
            robots: "user-agent: FooBot\ndisallow: /\n",
            expect: &[(FOO, "http://foo.bar/x/y", false)],
        },
        Table {
            name: "ID_LineSyntax_Line (unknown keys)",
            robots: "foo: FooBot\nbar: /\n",
            expect: &[(FOO, "http://foo.bar/x/y", true)],
        },
        // Google (and robotxt) also accept `user-agent FooBot` without the colon; RFC 9309 §2.2
        // requires it. That lenience is a Google extension, so it is not pinned here.
        Table {
            name: "ID_LineSyntax_Groups",
            robots: "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\n\
                     user-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\n\
                     user-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n",
            expect: &[
                (FOO, "http://foo.bar/x/b", true),
                (FOO, "http://foo.bar/z/d", true),
                (FOO, "http://foo.bar/y/c", false),
                ("BarBot", "http://foo.bar/y/c", true),
                ("BarBot", "http://foo.bar/w/a", true),
                ("BarBot", "http://foo.bar/z/d", false),
                ("BazBot", "http://foo.bar/z/d", true),
                // Rules before any group are ignored.
                (FOO, "http://foo.bar/foo/bar/", false),
                ("BarBot", "http://foo.bar/foo/bar/", false),
                ("BazBot", "http://foo.bar/foo/bar/", false),
            ],
        },
        Table {
            name: "ID_LineSyntax_Groups_OtherRules (sitemap inside the agent lines)",
            robots: "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
            expect: &[(FOO, "http://foo.bar/", false), ("BarBot", "http://foo.bar/", false)],
        },
        Table {
            name: "ID_LineSyntax_Groups_OtherRules (unknown line inside the agent lines)",
            robots: "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
            expect: &[(FOO, "http://foo.bar/", false), ("BarBot", "http://foo.bar/", false)],
        },
        Table {
            name: "ID_REPLineNamesCaseInsensitive",
            robots: "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
            expect: &[(FOO, "http://foo.bar/x/y", true), (FOO, "http://foo.bar/a/b", false)],
        },
        Table {
            name: "ID_REPLineNamesCaseInsensitive (upper)",
            robots: "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n",
            expect: &[(FOO, "http://foo.bar/x/y", true), (FOO, "http://foo.bar/a/b", false)],
        },
    ]);
}

#[test]
fn google_user_agents() {
    run(&[
        // ID_VerifyValidUserAgentsToObey, as groups: these tokens are valid and match.
        Table {
            name: "valid tokens",
            robots: "User-agent: Foobot\nDisallow: /\n\nUser-agent: Foobot-Bar\nDisallow: /\n\n\
                     User-agent: Foo_Bar\nDisallow: /\n",
            expect: &[
                ("Foobot", "http://foo.bar/x", false),
                ("Foobot-Bar", "http://foo.bar/x", false),
                ("Foo_Bar", "http://foo.bar/x", false),
            ],
        },
        // ID_UserAgentValueCaseInsensitive and GoogleOnly_AcceptUserAgentUpToFirstSpace: the
        // value is read up to the first character outside [A-Za-z_-], so `FOO BAR` names `FOO`.
        // RFC 9309 does not say how to read an invalid value; Shoal reads it as Google does,
        // because SPEC §3 needs `ShoalBot/2.1` to name ShoalBot and this is the same rule.
        Table {
            name: "ID_UserAgentValueCaseInsensitive",
            robots: "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n",
            expect: &[
                ("Foo", "http://foo.bar/x/y", true),
                ("Foo", "http://foo.bar/a/b", false),
                ("foo", "http://foo.bar/x/y", true),
                ("foo", "http://foo.bar/a/b", false),
            ],
        },
        // Google's API compares the whole `Foo Bar` argument and finds no group; Shoal takes the
        // product token of whatever it is given (`Foo`), since it is handed its own UA string.
        Table {
            name: "GoogleOnly_AcceptUserAgentUpToFirstSpace",
            robots: "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
            expect: &[("Foo", "http://foo.bar/x/y", true), ("Foo Bar", "http://foo.bar/x/y", true)],
        },
        Table {
            name: "ID_GlobalGroups_Secondary (empty file)",
            robots: "",
            expect: &[(FOO, "http://foo.bar/x/y", true)],
        },
        Table {
            name: "ID_GlobalGroups_Secondary (global)",
            robots: "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
            expect: &[(FOO, "http://foo.bar/x/y", false), ("BarBot", "http://foo.bar/x/y", true)],
        },
        Table {
            name: "ID_GlobalGroups_Secondary (only specific)",
            robots: "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n\
                     user-agent: BazBot\ndisallow: /\n",
            expect: &[("QuxBot", "http://foo.bar/x/y", true)],
        },
    ]);
}

#[test]
fn google_matching() {
    const PAGE: &str = "http://foo.bar/x/page.html";
    run(&[
        Table {
            name: "ID_AllowDisallow_Value_CaseSensitive (lower)",
            robots: "user-agent: FooBot\ndisallow: /x/\n",
            expect: &[(FOO, "http://foo.bar/x/y", false)],
        },
        Table {
            name: "ID_AllowDisallow_Value_CaseSensitive (upper)",
            robots: "user-agent: FooBot\ndisallow: /X/\n",
            expect: &[(FOO, "http://foo.bar/x/y", true)],
        },
        Table {
            name: "ID_LongestMatch 1",
            robots: "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
            expect: &[(FOO, PAGE, false)],
        },
        Table {
            name: "ID_LongestMatch 2",
            robots: "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
            expect: &[(FOO, PAGE, true), (FOO, "http://foo.bar/x/", false)],
        },
        Table {
            name: "ID_LongestMatch 3 (empty patterns)",
            robots: "user-agent: FooBot\ndisallow: \nallow: \n",
            expect: &[(FOO, PAGE, true)],
        },
        Table {
            name: "ID_LongestMatch 4 (allow wins a tie)",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /\n",
            expect: &[(FOO, PAGE, true)],
        },
        Table {
            name: "ID_LongestMatch 5",
            robots: "user-agent: FooBot\ndisallow: /x\nallow: /x/\n",
            expect: &[(FOO, "http://foo.bar/x", false), (FOO, "http://foo.bar/x/", true)],
        },
        Table {
            name: "ID_LongestMatch 6 (allow wins a tie)",
            robots: "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
            expect: &[(FOO, PAGE, true)],
        },
        Table {
            name: "ID_LongestMatch 7",
            robots: "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
            expect: &[(FOO, "http://foo.bar/page.html", false), (FOO, "http://foo.bar/page", true)],
        },
        Table {
            name: "ID_LongestMatch 8",
            robots: "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
            expect: &[(FOO, PAGE, true), (FOO, "http://foo.bar/x/y.html", false)],
        },
        Table {
            name: "ID_LongestMatch 9 (own group only)",
            robots: "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
            expect: &[(FOO, "http://foo.bar/x/page", true), (FOO, "http://foo.bar/y/page", false)],
        },
        Table {
            name: "ID_SpecialCharacters 1",
            robots: "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
            expect: &[
                (FOO, "http://foo.bar/foo/bar/quz", false),
                (FOO, "http://foo.bar/foo/quz", true),
                (FOO, "http://foo.bar/foo//quz", true),
                (FOO, "http://foo.bar/foo/bax/quz", true),
            ],
        },
        Table {
            name: "ID_SpecialCharacters 2",
            robots: "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
            expect: &[
                (FOO, "http://foo.bar/foo/bar", false),
                (FOO, "http://foo.bar/foo/bar/qux", true),
                (FOO, "http://foo.bar/foo/bar/", true),
                (FOO, "http://foo.bar/foo/bar/baz", true),
            ],
        },
        Table {
            name: "ID_SpecialCharacters 3 (comments)",
            robots: "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
            expect: &[(FOO, "http://foo.bar/foo/bar", true), (FOO, "http://foo.bar/foo/quz", false)],
        },
    ]);
}

#[test]
fn google_encoding_where_rfc_wins() {
    run(&[
        Table {
            name: "ID_Encoding 1 (query kept as is)",
            robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
            expect: &[(FOO, "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true)],
        },
        Table {
            name: "ID_Encoding 2 (raw UTF-8 rule)",
            robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n",
            expect: &[
                (FOO, "http://foo.bar/foo/bar/%E3%83%84", true),
                // RFC wins: Google leaves a raw `ツ` URL unencoded and disallows it; RFC 9309
                // §2.2.2 says to percent-encode before comparing, which matches the rule.
                (FOO, "http://foo.bar/foo/bar/ツ", true),
            ],
        },
        Table {
            name: "ID_Encoding 3 (encoded rule)",
            robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n",
            expect: &[
                (FOO, "http://foo.bar/foo/bar/%E3%83%84", true),
                // RFC wins, as above.
                (FOO, "http://foo.bar/foo/bar/ツ", true),
            ],
        },
        Table {
            name: "ID_Encoding 4 (encoded unreserved)",
            robots: "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n",
            expect: &[
                // RFC wins: Google disallows; RFC 9309 figure 4 maps /foo/bar/%62%61%7A to
                // /foo/bar/baz before matching.
                (FOO, "http://foo.bar/foo/bar/baz", true),
                (FOO, "http://foo.bar/foo/bar/%62%61%7A", true),
            ],
        },
    ]);
}

#[test]
fn google_documentation_checks() {
    run(&[
        Table {
            name: "/fish",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /fish\n",
            expect: &[
                (FOO, "http://foo.bar/bar", false),
                (FOO, "http://foo.bar/fish", true),
                (FOO, "http://foo.bar/fish.html", true),
                (FOO, "http://foo.bar/fish/salmon.html", true),
                (FOO, "http://foo.bar/fishheads", true),
                (FOO, "http://foo.bar/fishheads/yummy.html", true),
                (FOO, "http://foo.bar/fish.html?id=anything", true),
                (FOO, "http://foo.bar/Fish.asp", false),
                (FOO, "http://foo.bar/catfish", false),
                (FOO, "http://foo.bar/?id=fish", false),
            ],
        },
        Table {
            name: "/fish* equals /fish",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /fish*\n",
            expect: &[
                (FOO, "http://foo.bar/bar", false),
                (FOO, "http://foo.bar/fish", true),
                (FOO, "http://foo.bar/fishheads/yummy.html", true),
                (FOO, "http://foo.bar/Fish.bar", false),
                (FOO, "http://foo.bar/catfish", false),
                (FOO, "http://foo.bar/?id=fish", false),
            ],
        },
        Table {
            name: "/fish/ is not /fish",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /fish/\n",
            expect: &[
                (FOO, "http://foo.bar/fish/", true),
                (FOO, "http://foo.bar/fish/salmon", true),
                (FOO, "http://foo.bar/fish/?salmon", true),
                (FOO, "http://foo.bar/fish/?id=anything", true),
                (FOO, "http://foo.bar/fish", false),
                (FOO, "http://foo.bar/fish.html", false),
                (FOO, "http://foo.bar/Fish/Salmon.html", false),
            ],
        },
        Table {
            name: "/*.php",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /*.php\n",
            expect: &[
                (FOO, "http://foo.bar/bar", false),
                (FOO, "http://foo.bar/filename.php", true),
                (FOO, "http://foo.bar/folder/filename.php", true),
                (FOO, "http://foo.bar/folder/filename.php?parameters", true),
                (FOO, "http://foo.bar//folder/any.php.file.html", true),
                (FOO, "http://foo.bar/filename.php/", true),
                (FOO, "http://foo.bar/index?f=filename.php/", true),
                (FOO, "http://foo.bar/php/", false),
                (FOO, "http://foo.bar/index?php", false),
                (FOO, "http://foo.bar/windows.PHP", false),
            ],
        },
        Table {
            name: "/*.php$",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n",
            expect: &[
                (FOO, "http://foo.bar/filename.php", true),
                (FOO, "http://foo.bar/folder/filename.php", true),
                (FOO, "http://foo.bar/filename.php?parameters", false),
                (FOO, "http://foo.bar/filename.php/", false),
                (FOO, "http://foo.bar/filename.php5", false),
                (FOO, "http://foo.bar/filename?php", false),
                (FOO, "http://foo.bar/aaaphpaaa", false),
                (FOO, "http://foo.bar//windows.PHP", false),
            ],
        },
        Table {
            name: "/fish*.php",
            robots: "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n",
            expect: &[
                (FOO, "http://foo.bar/bar", false),
                (FOO, "http://foo.bar/fish.php", true),
                (FOO, "http://foo.bar/fishheads/catfish.php?parameters", true),
                (FOO, "http://foo.bar/Fish.PHP", false),
            ],
        },
        Table {
            name: "precedence /p",
            robots: "user-agent: FooBot\nallow: /p\ndisallow: /\n",
            expect: &[(FOO, "http://example.com/page", true)],
        },
        Table {
            name: "precedence /folder tie",
            robots: "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n",
            expect: &[(FOO, "http://example.com/folder/page", true)],
        },
        Table {
            name: "precedence /*.htm is longer",
            robots: "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n",
            expect: &[(FOO, "http://example.com/page.htm", false)],
        },
        Table {
            name: "precedence /$",
            robots: "user-agent: FooBot\nallow: /$\ndisallow: /\n",
            expect: &[(FOO, "http://example.com/", true), (FOO, "http://example.com/page.html", false)],
        },
        // GoogleOnly_IndexHTMLisDirectory (an allowed `/dir/index.html` also allows `/dir/`)
        // is a Google extension beyond RFC 9309; the RFC's prefix match wins, so `/dir/` stays
        // disallowed here.
        Table {
            name: "index.html is not the directory (RFC wins)",
            robots: "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n",
            expect: &[
                ("foobot", "http://foo.com/allowed-slash/", false),
                ("foobot", "http://foo.com/allowed-slash/index.htm", false),
                ("foobot", "http://foo.com/allowed-slash/index.html", true),
                ("foobot", "http://foo.com/anyother-url", false),
            ],
        },
    ]);
}

#[test]
fn google_line_endings_and_bom() {
    let groups = "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n";
    for (name, body) in [
        ("unix", groups.to_owned()),
        ("dos", groups.replace('\n', "\r\n")),
        ("mac", groups.replace('\n', "\r")),
        ("no final newline", groups.trim_end().to_owned()),
        ("mixed", "User-Agent: foo\nAllow: /some/path\r\nUser-Agent: bar\n\r\n\nDisallow: /".to_owned()),
    ] {
        // Four directives in two groups, whatever the line ends: `bar` may fetch nothing,
        // `foo` everything (the blank lines do not end bar's group).
        let bar = RobotsRules::parse(body.as_bytes(), &ProductToken::from_agent("bar"));
        assert!(!bar.check_str("http://x.test/other").is_allowed(), "{name}");
        assert!(!bar.check_str("http://x.test/some/path").is_allowed(), "{name}");
        let foo = RobotsRules::parse(body.as_bytes(), &ProductToken::from_agent("foo"));
        assert!(foo.check_str("http://x.test/other").is_allowed(), "{name}");
    }

    // ID_UTF8ByteOrderMarkIsSkipped: a full BOM is skipped; a broken one makes the first line
    // garbage, so the rule below it belongs to no group.
    let bar = ProductToken::from_agent("foo");
    let full = RobotsRules::parse(b"\xEF\xBB\xBFUser-Agent: foo\nDisallow: /AnyValue\n", &bar);
    assert!(!full.check_str("http://foo.bar/AnyValue").is_allowed());
    let broken = RobotsRules::parse(b"\xEF\x11\xBFUser-Agent: foo\nDisallow: /AnyValue\n", &bar);
    assert!(broken.check_str("http://foo.bar/AnyValue").is_allowed());
    // A BOM in the middle of the file is garbage too.
    let middle = RobotsRules::parse(b"User-Agent: foo\n\xEF\xBB\xBFDisallow: /AnyValue\n", &bar);
    assert!(middle.check_str("http://foo.bar/AnyValue").is_allowed());
}

#[test]
fn google_sitemaps_anywhere() {
    for body in [
        "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/sitemap.xml\n",
        "Sitemap: http://foo.bar/sitemap.xml\nUser-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\n",
    ] {
        let rules = RobotsRules::parse(body.as_bytes(), &ProductToken::from_agent("foo"));
        assert_eq!(rules.sitemaps(), ["http://foo.bar/sitemap.xml"]);
    }
}

/// RFC 9309 §5.1, the simple example (figure in the RFC; the closing `EOF` is not part of it).
#[test]
fn rfc_simple_example() {
    const EXAMPLE: &str = "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n\
         User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n\
         User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n\
         User-Agent: quxbot\n\n";
    const BASE: &str = "https://www.example.com";
    let cases: &[(&str, &str, bool)] = &[
        ("otherbot", "/example/page.html", false),
        ("otherbot", "/images/cat.gif", false),
        ("otherbot", "/cat.gif", false),
        ("otherbot", "/index.html", true),
        ("otherbot", "/publications/paper.html", true),
        ("foobot", "/example/page.html", true),
        ("foobot", "/example/allowed.gif", true),
        ("foobot", "/example/other.html", false),
        ("foobot", "/publications/paper.html", false),
        ("barbot", "/example/page.html", false),
        ("bazbot", "/example/page.html", false),
        ("barbot", "/example/other.html", true),
        ("bazbot", "/images/cat.gif", true),
        ("quxbot", "/example/page.html", true),
        ("quxbot", "/images/cat.gif", true),
    ];
    for &(agent, path, allowed) in cases {
        let rules = RobotsRules::parse(EXAMPLE.as_bytes(), &ProductToken::from_agent(agent));
        let verdict = rules.check_str(&format!("{BASE}{path}"));
        assert_eq!(verdict.is_allowed(), allowed, "{agent} {path}: {verdict:?}");
    }
}

/// RFC 9309 §5.2, longest match, and §2.2.2's encoding table.
#[test]
fn rfc_longest_match_and_encoding() {
    let foobot = ProductToken::from_agent("foobot");
    let rules = RobotsRules::parse(
        b"User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n",
        &foobot,
    );
    assert_eq!(
        rules.check_str("https://example.com/example/page/disallowed.gif"),
        Verdict::Disallowed { rule: "/example/page/disallowed.gif".to_owned() }
    );
    assert!(rules.check_str("https://example.com/example/page/other.gif").is_allowed());

    // §2.2.2: a rule and a URL match when they are equal after percent-encoding; hex digits
    // and unreserved escapes are normalised on both sides.
    for (rule, url) in [
        ("/foo/bar?baz=quz", "https://example.com/foo/bar?baz=quz"),
        ("/foo/bar/ツ", "https://example.com/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "https://example.com/foo/bar/ツ"),
        ("/foo/bar/%62%61%7A", "https://example.com/foo/bar/baz"),
        ("/foo/bar/baz", "https://example.com/foo/bar/%62%61%7A"),
        ("/caf%c3%a9", "https://example.com/caf%C3%A9"),
    ] {
        let body = format!("User-agent: foobot\nDisallow: {rule}\n");
        let rules = RobotsRules::parse(body.as_bytes(), &foobot);
        assert!(!rules.check_str(url).is_allowed(), "rule {rule} should block {url}");
    }

    // §2.2.3: `$` anywhere but the end, and `#`, are not special in the URL.
    let rules = RobotsRules::parse(b"User-agent: *\nDisallow: /a$b\n", &foobot);
    assert!(!rules.check_str("https://example.com/a$b/c").is_allowed());
    assert!(rules.check_str("https://example.com/a").is_allowed());
}

/// RFC 9309 §2.3.1.2 / §2.4: `/robots.txt` itself is always allowed, and with no matching group
/// and no `*` group there are no rules.
#[test]
fn rfc_robots_txt_and_no_group() {
    let token = ProductToken::from_agent("foobot");
    let rules = RobotsRules::parse(b"User-agent: *\nDisallow: /\n", &token);
    assert!(rules.check_str("https://example.com/robots.txt").is_allowed());
    assert!(!rules.check_str("https://example.com/robots.txt.bak").is_allowed());

    let rules = RobotsRules::parse(b"User-agent: otherbot\nDisallow: /\n", &token);
    assert!(rules.check_str("https://example.com/anything").is_allowed());
    assert_eq!(rules.group(), "*");
}
