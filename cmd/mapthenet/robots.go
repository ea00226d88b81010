package main

import "github.com/spf13/cobra"

func newRobotsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "robots",
		Short: "(not built yet: issue 3)",
		RunE:  notYet(3),
	}
}
