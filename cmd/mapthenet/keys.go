package main

import "github.com/spf13/cobra"

func newKeysCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keys",
		Short: "(not built yet: issue 4)",
		RunE:  notYet(4),
	}
}
