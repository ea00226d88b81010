package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print which build this is: version, commit, build time",
		Long: `version prints the module version, the commit and its time, and the Go
toolchain, as Go's build information records them ("mapthenet --version"
prints the same line). A binary built with "make build" in a git checkout
carries its commit; "(devel)" is the version of any checkout build.

--json prints {"version", "revision", "time", "modified", "go_version"}.`,
		Example: `  mapthenet version
  mapthenet --version
  mapthenet version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := buildinfo.Get()
			if asJSON {
				return writeJSONDoc(cmd.OutOrStdout(), in)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "mapthenet", in)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (fields above)")
	return cmd
}
