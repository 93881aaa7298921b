package operator

import "net/http"

func (s *Server) dashboardRoutes(mux *http.ServeMux) {}
