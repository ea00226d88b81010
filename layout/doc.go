// Package layout places domains on a two-dimensional map of the web: a
// force-directed layout (ForceAtlas2, Jacomy et al. 2014, with a
// Barnes–Hut quadtree for the repulsion) over the followed-edge graph
// taken as undirected, for the best-ranked domains, and every other ranked
// domain near the placed domains it links with.
//
// It works on package rank's compact graph (a CSR of in-edges): Induced
// cuts out the undirected graph of the top nodes, Run lays it out, Place
// puts the rest beside their neighbours; Map does all three. Given the
// nodes' communities (MapInput.Community, Graph.Community), it draws each
// as a region of its own: a cold start seeds every community's members in
// a disk of its own, and links between two communities pull less than
// links within one (communities.go).
//
// Results are reproducible bit for bit: the same input gives the same
// positions for any number of workers, because every node's force is
// computed into its own slot from a quadtree built by one goroutine, and
// every global sum is added up in a fixed chunk order. Initial positions
// come from a hash of each node's key (a hash of its name), not from its
// id, so they do not change when ids do.
//
// Stability across rebuilds: a layout can start from the previous
// positions (a warm start: fewer iterations, a lower initial speed), so a
// node moves about as much as its links changed. When the layout's input
// is exactly the previous one (same nodes by key, same edges, same
// parameters; compared by Fingerprint), Map returns the previous positions
// unchanged instead of iterating further.
//
// Effort: every Run is bounded by a work budget (Params.Budget, counted in
// node-iterations, an edge counting 1/32 of a node), so that the time of
// a layout does not grow with the iteration count times the graph but
// stays about the same for any big graph: about 3 s for 200,000 nodes and
// 1.5 million edges on two cores. Graphs up to about 15,000 nodes and
// 150,000 edges get the full 150 cold or 50 warm iterations, so small
// maps are laid out as before. A bigger cold start is multilevel: the best
// ranked nodes (a prefix of the order, a few thousand) are laid out with
// the full cold iterations, then prefixes eight times bigger each start
// from the one before (new nodes beside their laid-out neighbours, as in
// a warm start) and get the rest of the budget, a few iterations each. A
// bigger warm start gets what the budget pays for (about a dozen
// iterations on 200,000 nodes). So a big map is rough after its first
// rebuild (its communities apart, its finer structure not yet settled)
// and settles over the following rebuilds, each warm-started from the
// last; a rebuild whose layout input has not changed keeps the map as it
// is (it does not settle further).
package layout
