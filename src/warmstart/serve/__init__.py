"""`warmstart serve RUN`: a local web page and JSON API for one model.

``load.open_model`` picks the wrapper from the run's config.json (finetuned task, masked-LM run, or a
text-generating run), ``app.create_app`` builds the FastAPI app around it, ``run.serve`` binds the port and
runs uvicorn. Needs the ``serve`` extra (fastapi, uvicorn, prometheus_client, fastapi-offline); nothing
else in warmstart imports this package.
"""
