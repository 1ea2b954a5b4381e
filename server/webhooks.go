package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/store"
)

// Webhooks are a project's webhooks and their delivery logs.
type Webhooks interface {
	ListWebhooks(ctx context.Context, orgID, projectID, after int64, limit int) ([]store.Webhook, bool, error)
	CreateWebhook(ctx context.Context, orgID, projectID int64, url, secret string) (store.Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, projectID, webhookID int64) error
	ListDeliveries(ctx context.Context, orgID, projectID, webhookID, before int64, limit int) ([]store.Delivery, bool, error)
}

// WebhookTester sends a webhook a test event (outbox.Outbox).
type WebhookTester interface {
	Test(ctx context.Context, orgID, projectID, webhookID int64, body []byte) (outbox.Tested, error)
}

// WebhookPayload is an event as a webhook receives it: the API's
// AlarmEvent, for the outbox to deliver.
func WebhookPayload(e store.AlarmEvent) ([]byte, error) {
	return json.Marshal(toAlarmEvent(e))
}

// ListWebhooks returns a page of the project's webhooks.
func (s *Server) ListWebhooks(ctx context.Context, req gen.ListWebhooksRequestObject) (gen.ListWebhooksResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	hooks, more, err := s.Webhooks.ListWebhooks(ctx, req.OrgId, req.ProjId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListWebhooks200JSONResponse{Items: mapSlice(hooks, toWebhook)}
	if len(hooks) > 0 {
		out.NextCursor = nextCursor(more, hooks[len(hooks)-1].ID)
	}
	return out, nil
}

// CreateWebhook adds a webhook to the project.
func (s *Server) CreateWebhook(ctx context.Context, req gen.CreateWebhookRequestObject) (gen.CreateWebhookResponseObject, error) {
	u, err := url.Parse(req.Body.Url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("url %q must be an http or https URL with a host and no credentials", req.Body.Url),
			Details: map[string]any{"field": "url"}}
	}
	hook, err := s.Webhooks.CreateWebhook(ctx, req.OrgId, req.ProjId, u.String(), req.Body.Secret)
	if err != nil {
		return nil, err
	}
	return gen.CreateWebhook201JSONResponse(toWebhook(hook)), nil
}

// DeleteWebhook deletes a webhook.
func (s *Server) DeleteWebhook(ctx context.Context, req gen.DeleteWebhookRequestObject) (gen.DeleteWebhookResponseObject, error) {
	if err := s.Webhooks.DeleteWebhook(ctx, req.OrgId, req.ProjId, req.WebhookId); err != nil {
		return nil, err
	}
	return gen.DeleteWebhook204Response{}, nil
}

// TestWebhook sends a signed test event to a webhook now.
func (s *Server) TestWebhook(ctx context.Context, req gen.TestWebhookRequestObject) (gen.TestWebhookResponseObject, error) {
	body, err := json.Marshal(gen.AlarmEvent{Kind: "test", Target: "", Level: "", CreatedAt: toDatetime(time.Now())})
	if err != nil {
		return nil, err
	}
	tested, err := s.WebhookTester.Test(ctx, req.OrgId, req.ProjId, req.WebhookId, body)
	if err != nil {
		return nil, err
	}
	out := gen.TestWebhook200JSONResponse{Delivered: tested.Err == nil, Status: tested.Status}
	if tested.Err != nil {
		msg := tested.Err.Error()
		if urlErr, ok := errors.AsType[*url.Error](tested.Err); ok {
			msg = urlErr.Err.Error()
		}
		out.Error = &msg
	}
	return out, nil
}

// ListDeliveries returns a page of a webhook's delivery log.
func (s *Server) ListDeliveries(ctx context.Context, req gen.ListDeliveriesRequestObject) (gen.ListDeliveriesResponseObject, error) {
	before, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	list, more, err := s.Webhooks.ListDeliveries(ctx, req.OrgId, req.ProjId, req.WebhookId, before, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListDeliveries200JSONResponse{Items: mapSlice(list, toDelivery)}
	if len(list) > 0 {
		out.NextCursor = nextCursor(more, list[len(list)-1].ID)
	}
	return out, nil
}

func toWebhook(w store.Webhook) gen.Webhook {
	return gen.Webhook{Id: w.ID, Url: w.URL, CreatedAt: toDatetime(w.CreatedAt)}
}

func toDelivery(d store.Delivery) gen.Delivery {
	return gen.Delivery{
		Id: d.ID, EventId: d.EventID, Status: gen.DeliveryStatus(d.Status), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, NextAttemptAt: toDatetime(d.NextAt), DeliveredAt: optionalDatetime(d.DeliveredAt), CreatedAt: toDatetime(d.CreatedAt),
	}
}
