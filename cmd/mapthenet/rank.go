package main

import "github.com/spf13/cobra"

func newRankCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rank",
		Short: "(not built yet: issue 2)",
		RunE:  notYet(2),
	}
}
