-- An authenticated GET of PATH (from the environment) with the API key KEY.
wrk.method = "GET"
wrk.path = os.getenv("PATH_QUERY")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY")
