"""What a results directory says: summary tables, statistics over seeds, figures, the interactive
report, and the export to experiment trackers."""
