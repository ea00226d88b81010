package main

import "github.com/spf13/cobra"

func newDemoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "(not built yet: issue 3)",
		RunE:  notYet(3),
	}
}
