// Package layout places domains on a two-dimensional map of the web: a
// force-directed layout (ForceAtlas2, Jacomy et al. 2014, with a
// Barnes–Hut quadtree for the repulsion) over the followed-edge graph
// taken as undirected, for the best-ranked domains, and every other ranked
// domain near the placed domains it links with.
//
// It works on package rank's compact graph (a CSR of in-edges): Induced
// cuts out the undirected graph of the top nodes, Run lays it out, Place
// puts the rest beside their neighbours; Map does all three.
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
package layout
