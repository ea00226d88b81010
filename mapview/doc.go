// Package mapview draws the map of a snapshot: every domain the rebuild
// placed (domains.parquet's map_x, map_y) as one point, sized by rank and
// coloured by community, revisit tier, top-level domain or network
// operator.
//
// It makes two things from one [Map]:
//   - a picture, [WritePNG]: points (summed per pixel as a density, so
//     that a million read as regions), faint links among the top domains
//     and bands between communities ([LoadLinks]), non-overlapping labels
//     for the top domains, a legend and the snapshot's date;
//   - a self-contained page, [WriteHTML]: the points embedded in the page
//     (no network needed), drawn on a canvas, with pan and zoom, a tooltip
//     (domain, rank, tier, link words) and a search box that flies to a
//     domain. The page's script is page.html.tmpl, hand-written.
//
// [Load] reads a snapshot through rebuild's readers; [WriteFile] writes
// either output atomically.
package mapview
