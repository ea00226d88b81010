package main

import "github.com/spf13/cobra"

func newMapCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "map",
		Short: "(not built yet: issue 6)",
		RunE:  notYet(6),
	}
}
