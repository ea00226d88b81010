package main

import "github.com/spf13/cobra"

func newRebuildCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild",
		Short: "(not built yet: issue 2)",
		RunE:  notYet(2),
	}
}
