"""One candidate's way through the seven stages (pipeline.candidate), with no Prefect: flows/ runs it in batches."""
