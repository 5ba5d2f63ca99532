#include "tools/trace/report.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/trace/dot_svg.h"
#include "tools/trace/json.h"
#include "tools/trace/line_diff.h"

namespace lathe::trace {
namespace {

constexpr char kStyle[] = R"css(
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dee7; --bg: #ffffff;
        --panel: #f6f8fb; --accent: #2f6fdb; --add: #e6f6e9; --add-fg: #17692c;
        --del: #fde8e8; --del-fg: #a11d1d; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
       Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line);
         background: var(--panel); }
h1 { margin: 0 0 4px; font-size: 22px; }
h2 { margin: 0 0 12px; font-size: 18px; border-bottom: 1px solid var(--line);
     padding-bottom: 4px; }
h3 { margin: 16px 0 6px; font-size: 15px; }
.summary { color: var(--muted); margin: 0 0 8px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
section { padding: 16px 28px 8px; }
.empty { color: var(--muted); font-style: italic; }
.note { color: var(--muted); }
pre { margin: 6px 0 10px; padding: 8px 10px; background: var(--panel);
      border: 1px solid var(--line); border-radius: 4px; overflow: auto;
      max-height: 480px; font: 12px/1.4 ui-monospace, "DejaVu Sans Mono",
      Menlo, Consolas, monospace; white-space: pre; tab-size: 4; }
details { margin: 6px 0; border: 1px solid var(--line); border-radius: 4px;
          padding: 4px 10px; }
details > summary { cursor: pointer; font-weight: 600; padding: 2px 0; }
.stat { font-weight: normal; color: var(--muted); margin-left: 8px; }
.plus { color: var(--add-fg); } .minus { color: var(--del-fg); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap;
                 font-variant-numeric: tabular-nums; }
.timeline .name { white-space: nowrap; max-width: 320px; overflow: hidden;
                  text-overflow: ellipsis; }
.timeline .name a { color: var(--fg); }
.timeline .barcell { width: 60%; }
.bar { height: 12px; min-width: 1px; background: var(--accent);
       border-radius: 2px; }
td pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
.diff .add { background: var(--add); color: var(--add-fg); display: block; }
.diff .del { background: var(--del); color: var(--del-fg); display: block; }
.diff .ctx { display: block; }
.diff .skip { display: block; color: var(--muted); font-style: italic; }
.svg { overflow: auto; border: 1px solid var(--line); border-radius: 4px;
       padding: 8px; background: #fff; max-height: 900px; }
.svg svg { max-width: 100%; height: auto; }
)css";

const char* const kSectionTitles[] = {"Timeline",
                                      "Passes",
                                      "Kernels",
                                      "Fusion graph",
                                      "Guards",
                                      "Build",
                                      "Logs and other outputs"};

// An item's anchor: step `s`, item `i`.
std::string Anchor(size_t s, size_t i) { return absl::StrCat("s", s, "-", i); }

std::string Ms(double seconds) {
  return absl::StrFormat("%.3f ms", seconds * 1e3);
}

std::string Pre(absl::string_view text, absl::string_view cls = "") {
  return absl::StrCat("<pre", cls.empty() ? "" : " class=\"", cls,
                      cls.empty() ? "" : "\"", ">", HtmlEscape(text),
                      "</pre>\n");
}

// A diff as HTML lines, long unchanged runs folded to `context` lines each
// side; "+N −M" counts in `stat`.
std::string DiffHtml(absl::string_view before, absl::string_view after,
                     int context, std::string* stat) {
  std::vector<DiffLine> lines = DiffLines(before, after);
  int added = 0, removed = 0;
  std::vector<bool> keep(lines.size(), false);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].op == DiffLine::Op::kSame) continue;
    (lines[i].op == DiffLine::Op::kAdded ? added : removed)++;
    size_t from = i >= static_cast<size_t>(context) ? i - context : 0;
    size_t to = std::min(lines.size(), i + context + 1);
    for (size_t j = from; j < to; ++j) keep[j] = true;
  }
  *stat =
      absl::StrCat("<span class=\"plus\">+", added,
                   "</span> <span class=\"minus\">&minus;", removed, "</span>");
  if (added == 0 && removed == 0) {
    return "<p class=\"note\">No change from the graph before.</p>\n";
  }
  std::string out = "<pre class=\"diff\">";
  for (size_t i = 0; i < lines.size();) {
    if (!keep[i]) {
      size_t j = i;
      while (j < lines.size() && !keep[j]) ++j;
      absl::StrAppend(&out, "<span class=\"skip\">  \xE2\x8B\xAF ", j - i,
                      " unchanged line", j - i == 1 ? "" : "s", "</span>");
      i = j;
      continue;
    }
    const DiffLine& d = lines[i++];
    const char* cls = d.op == DiffLine::Op::kAdded     ? "add"
                      : d.op == DiffLine::Op::kRemoved ? "del"
                                                       : "ctx";
    const char* mark = d.op == DiffLine::Op::kAdded     ? "+ "
                       : d.op == DiffLine::Op::kRemoved ? "- "
                                                        : "  ";
    absl::StrAppend(&out, "<span class=\"", cls, "\">", mark,
                    HtmlEscape(d.text), "</span>");
  }
  out.append("</pre>\n");
  return out;
}

// An SVG from `dot` that is safe to inline: no script of any kind.
bool InlinableSvg(absl::string_view svg) {
  std::string lower = absl::AsciiStrToLower(svg);
  return absl::StartsWith(lower, "<svg") &&
         !absl::StrContains(lower, "<script") &&
         !absl::StrContains(lower, "<foreignobject") &&
         !absl::StrContains(lower, "javascript:");
}

bool IsKernelKind(absl::string_view kind) {
  return kind == kLoopIr || kind == kFusionLog || kind == kSource;
}

bool IsKnownKind(absl::string_view kind) {
  return kind == kGraph || IsKernelKind(kind) || kind == kDot ||
         kind == kGuards || kind == kCommand || kind == kCache;
}

class Renderer {
 public:
  Renderer(const std::vector<TraceStep>& steps, const ReportOptions& options)
      : steps_(steps), options_(options) {}

  std::string Render() {
    double total = 0;
    for (const TraceStep& s : steps_) total += s.seconds;
    std::string sections[] = {Timeline(), Passes(), Kernels(), FusionGraph(),
                              Guards(),   Build(),  Other()};
    std::string out = absl::StrCat(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width\">\n<title>",
        HtmlEscape(options_.title), "</title>\n<style>", kStyle,
        "</style>\n</head>\n<body>\n<header>\n<h1>", HtmlEscape(options_.title),
        "</h1>\n<p class=\"summary\">", steps_.size(), " step",
        steps_.size() == 1 ? "" : "s", ", ", Ms(total), " in all</p>\n<nav>");
    for (size_t i = 0; i < std::size(kReportSections); ++i) {
      absl::StrAppend(&out, "<a href=\"#", kReportSections[i], "\">",
                      kSectionTitles[i], "</a>");
    }
    out.append("</nav>\n</header>\n<main>\n");
    for (size_t i = 0; i < std::size(kReportSections); ++i) {
      absl::StrAppend(&out, "<section id=\"", kReportSections[i], "\">\n<h2>",
                      kSectionTitles[i], "</h2>\n",
                      sections[i].empty()
                          ? "<p class=\"empty\">Nothing recorded.</p>\n"
                          : sections[i],
                      "</section>\n");
    }
    out.append("</main>\n</body>\n</html>\n");
    return out;
  }

 private:
  // Where the timeline links step `s`: its first item, when it made one.
  std::string StepLink(size_t s) const {
    const TraceStep& step = steps_[s];
    if (step.made.empty()) return HtmlEscape(step.name);
    // Every item is anchored where it is shown; build items share one row,
    // anchored at the first of them.
    return absl::StrCat("<a href=\"#", Anchor(s, 0), "\">",
                        HtmlEscape(step.name), "</a>");
  }

  std::string Timeline() const {
    if (steps_.empty()) return "";
    double longest = 0, total = 0;
    for (const TraceStep& s : steps_) {
      longest = std::max(longest, s.seconds);
      total += s.seconds;
    }
    std::string out =
        "<table class=\"timeline\">\n<tr><th>step</th><th>time</th>"
        "<th class=\"num\">ms</th><th class=\"num\">share</th></tr>\n";
    for (size_t s = 0; s < steps_.size(); ++s) {
      double width = longest > 0 ? 100 * steps_[s].seconds / longest : 0;
      double share = total > 0 ? 100 * steps_[s].seconds / total : 0;
      absl::StrAppend(
          &out, "<tr><td class=\"name\">", StepLink(s),
          "</td><td class=\"barcell\"><div class=\"bar\" style=\"width:",
          absl::StrFormat("%.2f", width), "%\"></div></td><td class=\"num\">",
          absl::StrFormat("%.3f", steps_[s].seconds * 1e3),
          "</td><td class=\"num\">", absl::StrFormat("%.1f%%", share),
          "</td></tr>\n");
    }
    out.append("</table>\n");
    return out;
  }

  std::string Passes() const {
    std::string out;
    const std::string* previous = nullptr;
    for (size_t s = 0; s < steps_.size(); ++s) {
      for (size_t i = 0; i < steps_[s].made.size(); ++i) {
        const TraceItem& item = steps_[s].made[i];
        if (item.kind != kGraph) continue;
        std::string stat, diff;
        if (previous != nullptr) {
          diff = DiffHtml(*previous, item.text, options_.diff_context, &stat);
        }
        absl::StrAppend(
            &out, "<details id=\"", Anchor(s, i), "\" class=\"pass\"",
            previous == nullptr || *previous != item.text ? " open" : "",
            "><summary>", HtmlEscape(steps_[s].name), "<span class=\"stat\">",
            HtmlEscape(item.title), stat.empty() ? "" : " &middot; ", stat,
            "</span></summary>\n");
        if (previous != nullptr) {
          absl::StrAppend(&out, "<h3>Diff from the graph before</h3>\n", diff);
        }
        absl::StrAppend(&out, "<details class=\"graph\"",
                        previous == nullptr ? " open" : "",
                        "><summary>Graph</summary>\n", Pre(item.text),
                        "</details>\n</details>\n");
        previous = &item.text;
      }
    }
    return out;
  }

  std::string Kernels() const {
    std::string out;
    for (size_t s = 0; s < steps_.size(); ++s) {
      const TraceStep& step = steps_[s];
      std::string body;
      const TraceItem* previous_ir = nullptr;
      for (size_t i = 0; i < step.made.size(); ++i) {
        const TraceItem& item = step.made[i];
        if (!IsKernelKind(item.kind)) continue;
        absl::StrAppend(&body, "<details id=\"", Anchor(s, i),
                        "\" open><summary>", HtmlEscape(item.title),
                        "<span class=\"stat\">", HtmlEscape(item.kind),
                        "</span></summary>\n", Pre(item.text));
        if (item.kind == kLoopIr && previous_ir != nullptr) {
          std::string stat;
          std::string diff = DiffHtml(previous_ir->text, item.text,
                                      options_.diff_context, &stat);
          absl::StrAppend(
              &body, "<h3>Diff from ", HtmlEscape(previous_ir->title),
              " <span class=\"stat\">", stat, "</span></h3>\n", diff);
        }
        body.append("</details>\n");
        if (item.kind == kLoopIr) previous_ir = &item;
      }
      if (!body.empty()) {
        absl::StrAppend(&out, "<h3>", HtmlEscape(step.name),
                        " <span class=\"stat\">", Ms(step.seconds),
                        "</span></h3>\n", body);
      }
    }
    return out;
  }

  // `render(s, i, item)` for each item of each step that `wanted` picks.
  template <typename Wanted, typename Render>
  std::string EachItem(Wanted wanted, Render render) const {
    std::string out;
    for (size_t s = 0; s < steps_.size(); ++s) {
      for (size_t i = 0; i < steps_[s].made.size(); ++i) {
        const TraceItem& item = steps_[s].made[i];
        if (wanted(item.kind)) absl::StrAppend(&out, render(s, i, item));
      }
    }
    return out;
  }

  // An item's heading: its title, and the step that made it.
  std::string Heading(size_t s, size_t i) const {
    return absl::StrCat(
        "<h3 id=\"", Anchor(s, i), "\">", HtmlEscape(steps_[s].made[i].title),
        " <span class=\"stat\">", HtmlEscape(steps_[s].name), "</span></h3>\n");
  }

  std::string FusionGraph() const {
    return EachItem(
        [](absl::string_view kind) { return kind == kDot; },
        [&](size_t s, size_t i, const TraceItem& item) {
          std::optional<std::string> svg = options_.dot_to_svg
                                               ? options_.dot_to_svg(item.text)
                                               : DotToSvg(item.text);
          if (svg.has_value() && InlinableSvg(*svg)) {
            return absl::StrCat(
                Heading(s, i), "<div class=\"svg\">", *svg,
                "</div>\n<details><summary>Graphviz text</summary>\n",
                Pre(item.text), "</details>\n");
          }
          return absl::StrCat(
              Heading(s, i),
              "<p class=\"note\">Graphviz's <code>dot</code> was not found "
              "when this report was rendered (Debian package graphviz), so "
              "here is the picture's source; <code>dot -Tsvg</code> draws "
              "it.</p>\n",
              Pre(item.text));
        });
  }

  std::string Guards() const {
    return EachItem([](absl::string_view kind) { return kind == kGuards; },
                    [&](size_t s, size_t i, const TraceItem& item) {
                      return absl::StrCat(Heading(s, i), Pre(item.text));
                    });
  }

  std::string Build() const {
    std::string rows;
    for (size_t s = 0; s < steps_.size(); ++s) {
      const TraceStep& step = steps_[s];
      std::string commands, cache;
      std::optional<size_t> first;
      for (size_t i = 0; i < step.made.size(); ++i) {
        const TraceItem& item = step.made[i];
        if (item.kind == kCommand) {
          absl::StrAppend(&commands, Pre(item.text));
        } else if (item.kind == kCache) {
          absl::StrAppend(&cache, cache.empty() ? "" : "<br>",
                          HtmlEscape(item.text));
        } else {
          continue;
        }
        if (!first) first = i;
      }
      if (!first) continue;
      absl::StrAppend(&rows, "<tr id=\"", Anchor(s, *first), "\"><td>",
                      HtmlEscape(step.name), "</td><td class=\"num\">",
                      Ms(step.seconds), "</td><td>",
                      cache.empty() ? "&ndash;" : cache, "</td><td>",
                      commands.empty() ? "&ndash;" : commands, "</td></tr>\n");
    }
    if (rows.empty()) return "";
    return absl::StrCat(
        "<table class=\"build\">\n<tr><th>step</th><th class=\"num\">time</th>"
        "<th>cache</th><th>command</th></tr>\n",
        rows, "</table>\n");
  }

  std::string Other() const {
    return EachItem([](absl::string_view kind) { return !IsKnownKind(kind); },
                    [&](size_t s, size_t i, const TraceItem& item) {
                      return absl::StrCat(
                          "<details id=\"", Anchor(s, i), "\" open><summary>",
                          HtmlEscape(item.title), "<span class=\"stat\">",
                          HtmlEscape(steps_[s].name), " &middot; ",
                          HtmlEscape(item.kind), "</span></summary>\n",
                          Pre(item.text), "</details>\n");
                    });
  }

  const std::vector<TraceStep>& steps_;
  const ReportOptions& options_;
};

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      case '\'':
        out.append("&#39;");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string RenderReport(const std::vector<TraceStep>& steps,
                         const ReportOptions& options) {
  return Renderer(steps, options).Render();
}

}  // namespace lathe::trace
