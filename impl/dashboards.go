package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// DashboardMyDay implements GET /dashboard/my/day.
func (s *Server) DashboardMyDay(ctx context.Context, req gen.DashboardMyDayRequestObject) (gen.DashboardMyDayResponseObject, error) {
	return nil, errNotImplemented
}

// DashboardMyTasks implements GET /dashboard/my/tasks.
func (s *Server) DashboardMyTasks(ctx context.Context, req gen.DashboardMyTasksRequestObject) (gen.DashboardMyTasksResponseObject, error) {
	return nil, errNotImplemented
}

// DashboardKpiMy implements GET /dashboard/kpi/my.
func (s *Server) DashboardKpiMy(ctx context.Context, req gen.DashboardKpiMyRequestObject) (gen.DashboardKpiMyResponseObject, error) {
	return nil, errNotImplemented
}

// DashboardKpiTeam implements GET /dashboard/kpi/team.
func (s *Server) DashboardKpiTeam(ctx context.Context, req gen.DashboardKpiTeamRequestObject) (gen.DashboardKpiTeamResponseObject, error) {
	return nil, errNotImplemented
}
