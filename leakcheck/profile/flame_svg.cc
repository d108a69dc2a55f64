#include "leakcheck/profile/flame_svg.h"

#include <cstdint>
#include <cstdio>

#include "leakcheck/profile/flame_svg_script.h"
#include "leakcheck/profile/markup_escape.h"
#include "leakcheck/profile/value_format.h"

namespace stackwalk::profile {
namespace {

// The drawing's geometry, in px.
constexpr double kPad = 10;          // left and right margins
constexpr double kFrameHeight = 16;  // one stack level
constexpr double kHeader = 40;       // title, reset and search
constexpr double kFooter = 44;       // hover details, matched share, notes
constexpr double kCharPx = 7;        // a label character (11 px monospace, rounded up)

uint64_t NameHash(std::string_view name) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (const char c : name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

// The label a frame of `width_px` shows: the name, or its prefix and "..", or nothing.
std::string Label(std::string_view name, double width_px) {
  const double fits = (width_px - 6) / kCharPx;
  if (fits < 3) return {};
  const auto chars = static_cast<size_t>(fits);
  if (Utf8Length(name) <= chars) return std::string(name);
  return std::string(Utf8Prefix(name, chars - 2)) + "..";
}

void AppendText(std::string& out, std::string_view cls, double x, double y,
                std::string_view anchor, std::string_view escaped_text) {
  out += "<text class=\"";
  out += cls;
  out += "\" x=\"" + FormatCoordinate(x) + "\" y=\"" + FormatCoordinate(y) + "\"";
  if (!anchor.empty()) out += " text-anchor=\"" + std::string(anchor) + "\"";
  out += ">";
  out += escaped_text;
  out += "</text>\n";
}

}  // namespace

std::string FrameColour(std::string_view name) {
  const uint64_t hash = NameHash(name);
  const auto part = [&](int shift) { return static_cast<double>((hash >> shift) & 0xFFFF) / 65535; };
  const int red = 205 + static_cast<int>(50 * part(0));
  const int green = static_cast<int>(230 * part(16));
  const int blue = static_cast<int>(55 * part(32));
  char colour[8];
  std::snprintf(colour, sizeof(colour), "#%02x%02x%02x", red, green, blue);
  return colour;
}

std::string RenderFlameSvg(const FlameTree& tree, std::string_view title, ValueUnit unit,
                           const FlameSvgOptions& options) {
  const FlameLayout layout = LayOut(tree, options.layout);
  const uint64_t total = tree.root().total;
  const double width = options.layout.width_px;
  const double graph_width = width - 2 * kPad;
  const double height = kHeader + (layout.max_depth + 1) * kFrameHeight + kFooter;
  const std::string unit_name = unit == ValueUnit::kBytes ? "bytes" : "count";

  std::string out;
  out.reserve(1024 + layout.rects.size() * 200);
  if (options.standalone) out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"fg-root\"";
  out += " width=\"" + FormatCoordinate(width) + "\" height=\"" + FormatCoordinate(height) + "\"";
  out += " viewBox=\"0 0 " + FormatCoordinate(width) + " " + FormatCoordinate(height) + "\"";
  out += " data-total=\"" + std::to_string(total) + "\" data-unit=\"" + unit_name + "\"";
  out += " data-width=\"" + FormatCoordinate(width) + "\" data-pad=\"" + FormatCoordinate(kPad) +
         "\" data-char-px=\"" + FormatCoordinate(kCharPx) + "\">\n";
  out += "<style>";
  out += kFlameSvgStyle;
  out += "</style>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f6f6f2\"/>\n";
  AppendText(out, "fg-title", width / 2, 24, "middle", MarkupEscape(title));
  out += "<text class=\"fg-button fg-reset\" x=\"10\" y=\"24\" style=\"visibility:hidden\">"
         "Reset zoom</text>\n";
  AppendText(out, "fg-button fg-search", width - kPad, 24, "end", "Search");

  std::string idle = "Total " + FormatValue(total, unit);
  if (unit == ValueUnit::kBytes) idle += " (" + FormatExact(total, unit) + ")";
  idle += ", " + std::to_string(layout.rects.size()) + " frames; hover for details, click to zoom";
  AppendText(out, "fg-details", kPad, height - 26, "", MarkupEscape(idle));
  AppendText(out, "fg-matched", width - kPad, height - 26, "end", "");
  std::string note;
  if (layout.hidden_frames > 0) {
    note += GroupThousands(layout.hidden_frames) + " frames (" +
            FormatShare(layout.hidden_value, total) + " of the total) are not drawn: narrower than " +
            FormatCoordinate(options.layout.min_frame_px) + " px or past the " +
            GroupThousands(options.layout.max_frames) +
            " widest; they count in their callers' width. ";
  }
  if (tree.saturated()) note += "Values added past 2^64-1 and were capped there.";
  if (total == 0) note += "No values: nothing to draw.";
  AppendText(out, "fg-note", kPad, height - 8, "", MarkupEscape(note));

  out += "<g class=\"fg-frames\">\n";
  const double scale = total > 0 ? graph_width / static_cast<double>(total) : 0;
  for (const FlameRect& rect : layout.rects) {
    const FlameNode& node = tree.nodes()[rect.node];
    const std::string name = ValidUtf8(tree.Name(node));
    const double x = kPad + static_cast<double>(rect.offset) * scale;
    const double w = static_cast<double>(node.total) * scale;
    const double y = height - kFooter - (node.depth + 1) * kFrameHeight;
    out += "<g class=\"f\" data-x=\"" + std::to_string(rect.offset) + "\" data-v=\"" +
           std::to_string(node.total) + "\" data-d=\"" + std::to_string(node.depth) + "\">";
    out += "<title>" + MarkupEscape(name) + "\n" + MarkupEscape(FormatExact(node.total, unit)) +
           " (" + FormatShare(node.total, total) + ")</title>";
    out += "<rect x=\"" + FormatCoordinate(x) + "\" y=\"" + FormatCoordinate(y) + "\" width=\"" +
           FormatCoordinate(w) + "\" height=\"" + FormatCoordinate(kFrameHeight - 1) +
           "\" fill=\"" + FrameColour(name) + "\" rx=\"2\"/>";
    const std::string label = Label(name, w);
    if (!label.empty()) {
      out += "<text x=\"" + FormatCoordinate(x + 3) + "\" y=\"" + FormatCoordinate(y + 11.5) +
             "\">" + MarkupEscape(label) + "</text>";
    }
    out += "</g>\n";
  }
  out += "</g>\n<script type=\"text/javascript\"><![CDATA[";
  out += kFlameSvgScript;
  out += "]]></script>\n</svg>\n";
  return out;
}

}  // namespace stackwalk::profile
