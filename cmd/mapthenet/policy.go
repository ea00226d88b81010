package main

import (
	"github.com/spf13/pflag"

	"github.com/mapthenet/mapthenet/schedule"
)

// policyFlags are the revisit policy's flags: one tier table and one
// discovery threshold, flags of both crawl and rebuild, so that one key
// each in <data-dir>/config.toml sets them for both. They travel in a
// RebuildRequest too (JSON names).
type policyFlags struct {
	Tiers        []string `json:"tiers,omitempty"`
	MinInDomains int      `json:"min_in_domains,omitempty"`
}

func addPolicyFlags(f *pflag.FlagSet, fl *policyFlags) {
	f.StringSliceVar(&fl.Tiers, "tiers", nil, "revisit tiers by rank, MAXRANK:DAYS:PAGES,... best first; the last MAXRANK is * (every lower rank and the unranked), and first visits read its PAGES. "+
		"Set it in <data-dir>/config.toml so that crawl and rebuild use one table (default: DESIGN.md's, "+schedule.DefaultTiers.String()+")")
	f.IntVar(&fl.MinInDomains, "min-in-domains", schedule.DefaultMinInDomains, "visit a never-visited domain (not a seed) once this many domains link to it with followed links: "+
		"crawl for the domains its run finds, rebuild for the schedule. Set it in <data-dir>/config.toml so that both use it")
}

// policy checks the flags and returns the policy they configure.
func (fl policyFlags) policy() (schedule.Policy, error) {
	p := schedule.Policy{Tiers: schedule.DefaultTiers, MinInDomains: fl.MinInDomains}
	if len(fl.Tiers) > 0 {
		t, err := schedule.ParseTiers(fl.Tiers)
		if err != nil {
			return p, usagef("--tiers: %v", err)
		}
		p.Tiers = t
	}
	if fl.MinInDomains < 0 {
		return p, usagef("--min-in-domains %d: want a number of linking domains (0: the default, %d)", fl.MinInDomains, schedule.DefaultMinInDomains)
	}
	return p, nil
}
