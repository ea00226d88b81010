package main

import "github.com/spf13/cobra"

func newRemoveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "remove",
		Short: "(not built yet: issue 4)",
		RunE:  notYet(4),
	}
}
