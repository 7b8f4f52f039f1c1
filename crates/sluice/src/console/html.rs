//! HTML building blocks: escaping, the page layout with its navigation, form fields that
//! show their errors, badges coloured by status, numbers for people, and a line chart
//! drawn as inline SVG (no script, no external library).

use std::fmt::Write;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::state::Console;

/// Text made safe for HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One path segment, percent-encoded (topic, group and subject names may hold any
/// character a URL path cannot).
pub fn seg(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    out
}

/// The sections of the navigation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Topics,
    Groups,
    Schemas,
    Connectors,
    Planner,
    None,
}

const NAV: [(Nav, &str, &str); 6] = [
    (Nav::Overview, "/", "Overview"),
    (Nav::Topics, "/topics", "Topics"),
    (Nav::Groups, "/groups", "Consumer groups"),
    (Nav::Schemas, "/schemas", "Schemas"),
    (Nav::Connectors, "/connectors", "Connectors"),
    (Nav::Planner, "/plan", "Partition planner"),
];

/// A whole page: `title` in the tab and as the heading, `body` as the main content.
pub fn page(console: &Console, nav: Nav, title: &str, body: &str) -> Response {
    Html(render_page(console, nav, title, body)).into_response()
}

pub fn render_page(console: &Console, nav: Nav, title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Sluice console</title>\
         <link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/assets/console.css\">\
         <script src=\"/assets/console.js\" defer></script></head><body>\
         <a class=\"skip\" href=\"#main\">Skip to content</a>\
         <header><a class=\"brand\" href=\"/\">Sluice</a><nav aria-label=\"Main\"><ul>",
        esc(title)
    );
    for (item, href, label) in NAV {
        let current = if item == nav {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(out, "<li><a href=\"{href}\"{current}>{label}</a></li>");
    }
    out.push_str("</ul></nav>");
    let cluster = console.config.bootstrap_servers.join(",");
    let _ = write!(
        out,
        "<p class=\"cluster\">{}{}</p></header><main id=\"main\" tabindex=\"-1\"><h1>{}</h1>",
        esc(&cluster),
        if console.config.read_only {
            " <span class=\"badge muted\" title=\"console.read.only=true\">read-only</span>"
        } else {
            ""
        },
        esc(title)
    );
    out.push_str(body);
    out.push_str("</main></body></html>\n");
    out
}

/// A page that says what went wrong, with `status`.
pub fn error_page(console: &Console, status: StatusCode, title: &str, message: &str) -> Response {
    let body = format!("<p class=\"error\" role=\"alert\">{}</p>", esc(message));
    (status, Html(render_page(console, Nav::None, title, &body))).into_response()
}

/// A coloured badge: `kind` is `ok`, `warn`, `err` or `muted`.
pub fn badge(text: &str, kind: &str) -> String {
    format!("<span class=\"badge {kind}\">{}</span>", esc(text))
}

/// Burrow's status as a badge, coloured as Burrow's own dashboards colour it.
pub fn status_badge(status: &str) -> String {
    let kind = match status {
        "OK" => "ok",
        "WARN" | "WARNING" => "warn",
        "ERR" | "ERROR" | "STOP" | "STALL" | "REWIND" => "err",
        _ => "muted",
    };
    badge(status, kind)
}

/// How an API form answers success: reload the page, go to the URL the answer names
/// (`redirect`), or show the answer's `html` in the element with this id (`result:id`).
pub enum OnSuccess<'a> {
    Reload,
    Redirect,
    Result(&'a str),
}

/// The start of a form that `console.js` submits as JSON to `api` with `method`.
pub fn form_start(api: &str, method: &str, on_success: OnSuccess<'_>, label: &str) -> String {
    let success = match on_success {
        OnSuccess::Reload => "reload".to_string(),
        OnSuccess::Redirect => "redirect".to_string(),
        OnSuccess::Result(id) => format!("result:{id}"),
    };
    format!(
        "<form class=\"api-form\" data-api=\"{}\" data-method=\"{method}\" \
         data-success=\"{}\" aria-label=\"{}\" novalidate>",
        esc(api),
        esc(&success),
        esc(label)
    )
}

/// The end of an API form: its submit button, and where an error about no one field
/// and the success message appear.
pub fn form_end(submit: &str) -> String {
    format!(
        "<div class=\"actions\"><button type=\"submit\">{}</button></div>\
         <p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p>\
         <p class=\"form-status\" role=\"status\"></p></form>",
        esc(submit)
    )
}

/// A labelled field; `input` is its control, which must carry `id="f-{name}"` and
/// `name="{name}"`. Its error appears below it.
pub fn field(name: &str, label: &str, input: &str, hint: &str) -> String {
    let hint = if hint.is_empty() {
        String::new()
    } else {
        format!("<small id=\"h-{0}\">{1}</small>", esc(name), esc(hint))
    };
    format!(
        "<div class=\"field\"><label for=\"f-{0}\">{1}</label>{input}{hint}\
         <p class=\"field-error\" data-error-for=\"{0}\" role=\"alert\"></p></div>",
        esc(name),
        esc(label)
    )
}

/// A text input for [`field`].
pub fn text_input(name: &str, value: &str, extra: &str) -> String {
    format!(
        "<input type=\"text\" id=\"f-{0}\" name=\"{0}\" value=\"{1}\" {extra}>",
        esc(name),
        esc(value)
    )
}

/// A number input for [`field`] (sent as a JSON number, or null when empty).
pub fn number_input(name: &str, value: &str, extra: &str) -> String {
    format!(
        "<input type=\"number\" id=\"f-{0}\" name=\"{0}\" value=\"{1}\" {extra}>",
        esc(name),
        esc(value)
    )
}

/// A textarea for [`field`].
pub fn textarea(name: &str, value: &str, rows: u32, extra: &str) -> String {
    format!(
        "<textarea id=\"f-{0}\" name=\"{0}\" rows=\"{rows}\" {extra}>{1}</textarea>",
        esc(name),
        esc(value)
    )
}

/// A select for [`field`]; `options` are (value, label), `selected` the chosen value.
pub fn select(name: &str, options: &[(&str, &str)], selected: &str) -> String {
    let mut out = format!("<select id=\"f-{0}\" name=\"{0}\">", esc(name));
    for (value, label) in options {
        let chosen = if *value == selected { " selected" } else { "" };
        let _ = write!(
            out,
            "<option value=\"{}\"{chosen}>{}</option>",
            esc(value),
            esc(label)
        );
    }
    out.push_str("</select>");
    out
}

/// A button outside a form that sends one API request (`body` as JSON) and reloads.
pub fn action_button(api: &str, method: &str, body: &str, label: &str) -> String {
    format!(
        "<button type=\"button\" class=\"api-action\" data-api=\"{}\" data-method=\"{method}\" \
         data-body=\"{}\">{}</button>",
        esc(api),
        esc(body),
        esc(label)
    )
}

/// A search box that hides the rows of table `table_id` that do not contain its text.
pub fn table_filter(table_id: &str, label: &str) -> String {
    format!(
        "<div class=\"field inline\"><label for=\"filter-{0}\">{1}</label>\
         <input type=\"search\" id=\"filter-{0}\" data-filter-table=\"{0}\"></div>",
        esc(table_id),
        esc(label)
    )
}

/// Bytes for people: `1.5 MiB`.
pub fn bytes(count: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = count as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{count} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A rate for people: `12.3/s`, `—` when unknown.
pub fn rate(per_second: Option<f64>) -> String {
    match per_second {
        None => "—".to_string(),
        Some(r) if r >= 100.0 => format!("{r:.0}/s"),
        Some(r) => format!("{r:.1}/s"),
    }
}

/// A Unix time in milliseconds as UTC, `2026-12-07 15:04:05.123`.
pub fn time_ms(ms: i64) -> String {
    if ms < 0 {
        return "—".to_string();
    }
    let seconds = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{millis:03}",
        rest / 3600,
        (rest / 60) % 60,
        rest % 60
    )
}

/// Howard Hinnant's civil_from_days: days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A line chart of `points` (Unix ms, value) as inline SVG with a text alternative.
pub fn line_chart(points: &[(i64, f64)], label: &str, unit: &str) -> String {
    const W: f64 = 640.0;
    const H: f64 = 160.0;
    const PAD: f64 = 30.0;
    if points.len() < 2 {
        return format!(
            "<p class=\"muted\">{}: not enough samples yet.</p>",
            esc(label)
        );
    }
    let (t0, t1) = (points[0].0, points[points.len() - 1].0);
    let max = points.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1.0);
    let span = (t1 - t0).max(1) as f64;
    let mut path = String::new();
    for (i, (t, v)) in points.iter().enumerate() {
        let x = PAD + (*t - t0) as f64 / span * (W - 2.0 * PAD);
        let y = H - PAD - v / max * (H - 2.0 * PAD);
        let _ = write!(path, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { " L" });
    }
    let last = points[points.len() - 1].1;
    format!(
        "<figure class=\"chart\"><svg viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"{0}: last {1:.0} {2}, max {3:.0} {2}\">\
         <line x1=\"{PAD}\" y1=\"{4}\" x2=\"{5}\" y2=\"{4}\" class=\"axis\"/>\
         <line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{4}\" class=\"axis\"/>\
         <text x=\"2\" y=\"{PAD}\" class=\"tick\">{3:.0}</text>\
         <text x=\"2\" y=\"{4}\" class=\"tick\">0</text>\
         <path d=\"{path}\" class=\"series\"/></svg>\
         <figcaption>{0} ({2}), {6} to {7} UTC</figcaption></figure>",
        esc(label),
        last,
        esc(unit),
        max,
        H - PAD,
        W - PAD,
        time_ms(t0),
        time_ms(t1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(seg("orders.v1_x-y"), "orders.v1_x-y");
        assert_eq!(seg("a/b c?é"), "a%2Fb%20c%3F%C3%A9");
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(time_ms(0), "1970-01-01 00:00:00.000");
        assert_eq!(time_ms(1_796_655_845_123), "2026-12-07 15:04:05.123");
        assert_eq!(time_ms(-1), "—");
    }

    #[test]
    fn bytes_and_rates_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
        assert_eq!(rate(None), "—");
        assert_eq!(rate(Some(2.25)), "2.2/s");
        assert_eq!(rate(Some(1234.0)), "1234/s");
    }

    #[test]
    fn a_chart_needs_two_points_and_scales_to_its_maximum() {
        assert!(line_chart(&[(0, 1.0)], "lag", "records").contains("not enough samples"));
        let svg = line_chart(&[(0, 0.0), (1000, 50.0), (2000, 100.0)], "lag", "records");
        assert!(svg.contains("last 100 records, max 100 records"), "{svg}");
        assert!(svg.contains("M30.0,130.0 L320.0,80.0 L610.0,30.0"), "{svg}");
    }
}
