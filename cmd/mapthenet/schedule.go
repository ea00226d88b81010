package main

import "github.com/spf13/cobra"

func newScheduleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schedule",
		Short: "(not built yet: issue 2)",
		RunE:  notYet(2),
	}
}
