package snapshot

// Prune removes all but the newest keep snapshots of st, never the current
// one (a replay at an earlier time may be current and the oldest). It
// returns the ids removed. Whoever prunes holds the rebuild lock.
func Prune(st Storage, keep int) ([]string, error) {
	ids, err := st.List()
	if err != nil {
		return nil, err
	}
	cur, err := st.Current()
	if err != nil {
		return nil, err
	}
	var removed []string
	for i, id := range ids {
		if i >= len(ids)-keep || id == cur {
			continue
		}
		if err := st.Remove(id); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}
